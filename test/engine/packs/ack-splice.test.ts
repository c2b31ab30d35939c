import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { openDb, type Db } from "../../../src/db/client";
import type { AckOutcome } from "../../../src/engine/ack";
import type { HolderWriteHow } from "../../../src/engine/packs/acks";
import {
  completePackTasks,
  extendPackLeases,
  failPackTasks,
  heartbeatPackTask,
  releasePackTasks,
} from "../../../src/engine/packs/holder-writes";
import { decodePack, packFigures, PACK_COLUMNS, type PackRowRead } from "../../../src/engine/packs/pack-row";
import { packTaskStore } from "../../../src/engine/packs/pack-store";
import { getQueueConfig } from "../../../src/engine/queue-config";
import { PROCESSORS, T0, uniqueQueue } from "../../helpers";
import { meteredD1 } from "../../support/metered-d1";
import { recordingD1 } from "./recording-d1";

// The holder's writes as slot splices evaluated at write time (src/engine/packs/slot-splice.ts): what they
// write is what the whole-pack guarded write writes for the same calls, slot by slot, with the same figures,
// counters and answers; holders acking slots of one pack each commit their first batch; and the fence holds
// at write time.

const db = () => openDb(env.DB);
const store = () => packTaskStore(db());
const many = (n: number, from = 0) => Array.from({ length: n }, (_, i) => ({ payload: { i: from + i } }));
const T = T0 + 7 * 86_400_000; // this file's own time range

type Row = PackRowRead & { next_at: number | null; rare_at: number | null; live: number; ready: number; n: number };

async function packsOf(queue: string): Promise<Row[]> {
  return db().all<Row>(
    sql`SELECT ${sql.raw(PACK_COLUMNS)}, next_at, rare_at, live, ready, n FROM packs WHERE queue = ${queue}
      ORDER BY created_at, id`,
  );
}

/** A queue's packs as the store would answer them, ids and tokens aside: slot by slot, with the row's figures. */
async function packState(queue: string) {
  return (await packsOf(queue)).map((row) => {
    const pack = decodePack(row);
    return {
      figures: { live: row.live, ready: row.ready, next_at: row.next_at, rare_at: row.rare_at, n: row.n },
      finished_at: row.finished_at,
      ver: row.ver,
      slots: pack.slots.map((s) => ({ st: s.st, a: s.a, body: s.body, lease: s.lease && { ...s.lease, k: "-" } })),
    };
  });
}

/** Every pack's stored figures are packFigures of its slots as stored. */
async function expectFiguresFromSlots(queue: string, now: number) {
  const config = await getQueueConfig(db(), queue);
  for (const row of await packsOf(queue)) {
    const f = packFigures(decodePack(row), config, now);
    expect({
      live: row.live,
      ready: row.ready,
      next_at: row.next_at,
      rare_at: row.rare_at,
      fin: row.finished_at,
    }).toEqual({ live: f.live, ready: f.ready, next_at: f.nextAt, rare_at: f.rareAt, fin: f.finishedAt });
  }
}

async function countersOf(queue: string) {
  const rows = await db().all<Record<string, unknown>>(
    sql`SELECT * FROM task_counters WHERE queue = ${queue} ORDER BY type, minute`,
  );
  return rows.map((row): Record<string, unknown> => ({ ...row, queue: "-" }));
}

/** An answer with ids as positions among the queue's leased tasks. */
function answer(o: AckOutcome, ids: string[]) {
  if (!o.ok) return { at: ids.indexOf(o.id), code: o.error.code };
  return { ...o, id: "-", queue: "-", at: ids.indexOf(o.id) };
}

/** The same calls on one queue, every holder write made `how`: their answers. */
async function script(queue: string, d: Db, how: HolderWriteHow) {
  await store().putQueueConfig(queue, { max_attempts: 3, backoff_base_s: 2, backoff_cap_s: 40 }, T, PROCESSORS);
  await store().enqueueTasks(queue, many(8), T);
  await store().enqueueTasks(queue, many(3, 8), T + 1);
  const leased = await store().leaseTasks({ queue, max: 7, visibilityTimeoutS: 30, holder: "w" }, T + 2);
  const ids = leased.map((t) => t.id);
  const tok = (k: number) => leased[k]!.leaseToken!;
  const answers: unknown[] = [];
  const add = (os: AckOutcome[]) => answers.push(os.map((o) => answer(o, ids)));
  // Two completions in one call (one with a result), a stale token and an unknown id beside them.
  add(
    await completePackTasks(
      d,
      [
        { id: ids[0]!, leaseToken: tok(0), result: { ok: 1, url: "https://x" } },
        { id: ids[1]!, leaseToken: tok(1) },
        { id: ids[2]!, leaseToken: "not-the-token" },
        { id: `${ids[2]!.slice(0, -2)}zz`, leaseToken: tok(2) },
      ],
      T + 3,
      undefined,
      how,
    ),
  );
  // The repeat of a completion: `repeated`.
  add(await completePackTasks(d, [{ id: ids[0]!, leaseToken: tok(0) }], T + 4, undefined, how));
  // A retry at a time of its own, and a permanent failure (dead).
  add(
    await failPackTasks(
      d,
      [
        { id: ids[2]!, leaseToken: tok(2), message: "again", retryAfterS: 5 },
        { id: ids[3]!, leaseToken: tok(3), message: "never", retryable: false },
      ],
      T + 5,
      undefined,
      how,
    ),
  );
  add(await extendPackLeases(d, [{ id: ids[4]!, leaseToken: tok(4), visibilityTimeoutS: 90 }], T + 6, undefined, how));
  const beat = await heartbeatPackTask(
    d,
    { id: ids[5]!, leaseToken: tok(5), progress: 40, progressMessage: "half", checkpoint: { page: 3 }, extendS: 45 },
    T + 7,
    how,
  );
  answers.push({ ...beat, id: ids.indexOf(beat.id), queue: "-", leaseToken: "-" });
  add(await releasePackTasks(d, [{ id: ids[4]!, leaseToken: tok(4) }], T + 8, undefined, how));
  // A cancel requested while processing: the holder's completion ends it cancelled.
  await store().cancelTask(ids[6]!, T + 9);
  add(await completePackTasks(d, [{ id: ids[6]!, leaseToken: tok(6), result: 1 }], T + 10, undefined, how));
  // An expired lease is refused.
  add(await completePackTasks(d, [{ id: ids[5]!, leaseToken: tok(5) }], T + 7 + 45_001, undefined, how));
  // The second pack, leased and completed whole: the pack ends (finished_at), one completion carrying a result.
  const rest = await store().leaseTasks({ queue, max: 10, visibilityTimeoutS: 30, holder: "v" }, T + 11);
  const second = rest.filter((t) => !ids.includes(t.id) && JSON.parse(t.payload).i >= 8);
  expect(second).toHaveLength(3);
  add(
    await completePackTasks(
      d,
      second.map((t, k) => ({ id: t.id, leaseToken: t.leaseToken!, ...(k === 0 ? { result: [1, 2] } : {}) })),
      T + 12,
      undefined,
      how,
    ),
  );
  return answers;
}

describe("pack store: a holder's writes spliced at write time write what the whole-pack write writes", () => {
  it("complete (with a result), fail (retry, dead), extend, heartbeat, release, a cancel request, refusals: slot by slot", async () => {
    const whole = uniqueQueue("splice-eq-whole");
    const spliced = uniqueQueue("splice-eq-spliced");
    const recWhole = recordingD1(env.DB);
    const recSpliced = recordingD1(env.DB);
    const answersWhole = await script(whole, openDb(recWhole.db), "whole");
    const answersSpliced = await script(spliced, openDb(recSpliced.db), "splice");
    expect(answersSpliced).toEqual(answersWhole);
    expect(await packState(spliced)).toEqual(await packState(whole));
    expect(await countersOf(spliced)).toEqual(await countersOf(whole));
    await expectFiguresFromSlots(spliced, T + 12);
    // Every write of the spliced queue spliced (none fell back to a whole write), and none of the other's.
    const splices = (calls: string[][]) => calls.filter((c) => c.some((s) => s.includes("nw.st"))).length;
    const wholeWrites = (calls: string[][]) =>
      calls.filter((c) => c.some((s) => /UPDATE packs SET next_at/.test(s))).length;
    expect(splices(recSpliced.calls)).toBe(7);
    expect(wholeWrites(recSpliced.calls)).toBe(0);
    expect(splices(recWhole.calls)).toBe(0);
    expect(wholeWrites(recWhole.calls)).toBe(7);
    // The second pack ended in the write of its last live slot.
    expect((await packsOf(spliced))[1]!.finished_at).toBe(T + 12);
  });

  it("a result too large for the row spills through the whole write, in the same call as a spliced one", async () => {
    const queue = uniqueQueue("splice-spill");
    await store().enqueueTasks(queue, many(2), T);
    await store().enqueueTasks(queue, many(2, 2), T + 1);
    const leased = await store().leaseTasks({ queue, max: 4, visibilityTimeoutS: 30, holder: "w" }, T + 2);
    const rec = recordingD1(env.DB);
    const big = "x".repeat(10_000);
    const byPack = leased.map((t) => t.id.slice(0, 24));
    const out = await completePackTasks(
      openDb(rec.db),
      [
        { id: leased[0]!.id, leaseToken: leased[0]!.leaseToken!, result: { big } },
        { id: leased[3]!.id, leaseToken: leased[3]!.leaseToken!, result: "small" },
      ],
      T + 3,
    );
    expect(byPack[0]).not.toBe(byPack[3]);
    expect(out.every((o) => o.ok)).toBe(true);
    expect(JSON.parse((await store().getTask(leased[0]!.id))!.result!)).toEqual({ big });
    expect(JSON.parse((await store().getTask(leased[3]!.id))!.result!)).toBe("small");
    const [batch] = rec.calls.filter((c) => c.length > 1);
    expect(batch!.some((s) => s.includes("nw.st"))).toBe(true);
    expect(batch!.some((s) => /INSERT INTO pack_spill/.test(s))).toBe(true);
    await expectFiguresFromSlots(queue, T + 3);
  });
});

/** 25 holders each completing its own slot of one pack at once: the write batches and rows written. */
async function race(how: HolderWriteHow) {
  const queue = uniqueQueue(`splice-race-${how}`);
  await store().enqueueTasks(queue, many(25), T);
  const leased = await store().leaseTasks({ queue, max: 25, visibilityTimeoutS: 30, holder: "w" }, T + 1);
  expect(leased).toHaveLength(25);
  const rec = recordingD1(env.DB);
  const metered = meteredD1(rec.db);
  const d = openDb(metered.db);
  const out = await Promise.all(
    leased.map((t) =>
      completePackTasks(d, [{ id: t.id, leaseToken: t.leaseToken!, result: { by: t.id } }], T + 2, undefined, how),
    ),
  );
  expect(out.flat().every((o) => o.ok && o.state === "completed" && !o.repeated)).toBe(true);
  for (const t of leased) expect(JSON.parse((await store().getTask(t.id))!.result!)).toEqual({ by: t.id });
  const [row] = await packsOf(queue);
  expect(row).toMatchObject({ live: 0, ready: 0, finished_at: T + 2, st: "c".repeat(25) });
  const counters = await countersOf(queue);
  expect(counters.reduce((n, c) => n + Number(c.completed), 0)).toBe(25);
  const batches = rec.calls.filter((c) => c.length > 1 && c.some((s) => /UPDATE packs/.test(s))).length;
  return { batches, rowsWritten: metered.usage.rowsWritten };
}

describe("pack store: holders acking slots of one pack each commit their first batch", () => {
  it("25 concurrent completions of one pack: 25 write batches spliced, more whole; the same rows written", async () => {
    const whole = await race("whole");
    const spliced = await race("splice");
    console.log(`25 holders, one pack: whole ${JSON.stringify(whole)}, spliced ${JSON.stringify(spliced)}`);
    expect(spliced.batches).toBe(25);
    expect(whole.batches).toBeGreaterThan(25);
    expect(spliced.rowsWritten).toBe(whole.rowsWritten);
  }, 60_000); // the whole-pack arm runs 25 × 26 / 2 = 325 batches one after another: ~10-25 s on 2 shared cores
});

describe("pack store: the splice's fence at write time", () => {
  it("old holders (leases expired and taken over) and new ones race for the same slots: only the new complete, once each", async () => {
    const queue = uniqueQueue("splice-fence");
    await store().putQueueConfig(queue, { backoff_base_s: 1, backoff_cap_s: 1 }, T, PROCESSORS);
    await store().enqueueTasks(queue, many(20), T);
    const old = await store().leaseTasks({ queue, max: 20, visibilityTimeoutS: 10, holder: "old" }, T + 1);
    const now = T + 1 + 10_000 + 1_000 + 1;
    const fresh = await store().leaseTasks({ queue, max: 20, visibilityTimeoutS: 30, holder: "new" }, now);
    expect(fresh.map((t) => t.id).sort()).toEqual(old.map((t) => t.id).sort());
    const byId = new Map(fresh.map((t) => [t.id, t]));
    const calls = old.flatMap((t, k) => [
      completePackTasks(db(), [{ id: t.id, leaseToken: t.leaseToken! }], now + 1),
      // every other new holder also sends its completion twice at once: one applies, the other is a repeat
      ...Array.from({ length: k % 2 ? 2 : 1 }, () =>
        completePackTasks(db(), [{ id: t.id, leaseToken: byId.get(t.id)!.leaseToken!, result: k }], now + 1),
      ),
    ]);
    const out = (await Promise.all(calls)).flat();
    const stale = out.filter((o) => !o.ok);
    expect(stale).toHaveLength(20);
    expect(stale.every((o) => !o.ok && o.error.code === "lease_lost")).toBe(true);
    const applied = out.filter((o) => o.ok && !o.repeated);
    expect(applied.map((o) => o.id).sort()).toEqual(old.map((t) => t.id).sort());
    expect(out.filter((o) => o.ok && o.repeated)).toHaveLength(10);
    const counters = await countersOf(queue);
    expect(counters.reduce((n, c) => n + Number(c.completed), 0)).toBe(20);
    await expectFiguresFromSlots(queue, now + 1);
    // A lease expired at write time is refused, the slot untouched.
    const again = await store().leaseTasks({ queue, max: 1, visibilityTimeoutS: 30, holder: "late" }, now + 2);
    expect(again).toEqual([]);
  });

  it("completions after the lease's expiry are refused, concurrently, and leave every slot processing", async () => {
    const queue = uniqueQueue("splice-expired");
    await store().enqueueTasks(queue, many(10), T);
    const leased = await store().leaseTasks({ queue, max: 10, visibilityTimeoutS: 10, holder: "w" }, T + 1);
    const out = (
      await Promise.all(
        leased.map((t) => completePackTasks(db(), [{ id: t.id, leaseToken: t.leaseToken! }], T + 1 + 10_000)),
      )
    ).flat();
    expect(out.every((o) => !o.ok && o.error.code === "lease_lost")).toBe(true);
    expect((await packsOf(queue))[0]).toMatchObject({ st: "r".repeat(10), live: 10 });
  });

  it("a cancel requested between the holder's read and its batch: the splice's guard refuses, the call is computed again whole", async () => {
    const queue = uniqueQueue("splice-fallback");
    await store().enqueueTasks(queue, many(3), T);
    const [task] = await store().leaseTasks({ queue, max: 1, visibilityTimeoutS: 30, holder: "w" }, T + 1);
    const rec = recordingD1(env.DB);
    let cancelled = false;
    // The operator's cancel lands after the holder read the slot, before its first batch reaches D1.
    const racing = new Proxy(rec.db, {
      get(target, p) {
        if (p === "batch")
          return async (statements: D1PreparedStatement[]) => {
            if (!cancelled) {
              cancelled = true;
              await store().cancelTask(task!.id, T + 2);
            }
            return target.batch(statements);
          };
        const value = target[p as keyof D1Database];
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const [out] = await completePackTasks(openDb(racing), [{ id: task!.id, leaseToken: task!.leaseToken! }], T + 3);
    expect(out).toMatchObject({ ok: false, error: { code: "task_cancelled" } });
    expect(await store().getTask(task!.id)).toMatchObject({ state: "cancelled", finishedAt: T + 3 });
    const writes = rec.calls.filter((c) => c.length > 1);
    expect(writes).toHaveLength(2);
    expect(writes[0]!.some((s) => s.includes("nw.st"))).toBe(true);
    expect(writes[1]!.some((s) => /UPDATE packs SET next_at/.test(s))).toBe(true);
    await expectFiguresFromSlots(queue, T + 3);
  });
});
