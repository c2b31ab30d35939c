import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { openDb } from "../../../src/db/client";
import { PACK_COLUMNS, type PackRowRead } from "../../../src/engine/packs/pack-row";
import { packTaskStore } from "../../../src/engine/packs/pack-store";
import { PROCESSORS, T0, uniqueQueue } from "../../helpers";
import { expectFiguresFromSlots } from "./pack-state";
import { recordingD1 } from "./recording-d1";

// The pack store's lease of pending slots in SQL evaluated at write time (src/engine/packs/lease-sql.ts):
// what it writes is what the slots say (packFigures, the one definition of a pack's figures), and leasers
// racing for one pack take what the others left instead of computing their write again.

const db = () => openDb(env.DB);
const store = () => packTaskStore(db());
const many = (n: number, from = 0) => Array.from({ length: n }, (_, i) => ({ payload: { i: from + i } }));

type Row = PackRowRead & { next_at: number | null; rare_at: number | null; live: number; ready: number; n: number };

/** Every pack of a queue with its stored figures. */
async function packsOf(queue: string): Promise<Row[]> {
  return db().all<Row>(
    sql`SELECT ${sql.raw(PACK_COLUMNS)}, next_at, rare_at, live, ready, n FROM packs WHERE queue = ${queue} ORDER BY id`,
  );
}

describe("pack store: the SQL lease writes what the slots say (lease-sql.ts against packFigures)", () => {
  it("partial leases, slots out of order, several packs, a retry not yet due: figures, attempts, entries and bodies", async () => {
    const queue = uniqueQueue("lsql-figures");
    await store().putQueueConfig(queue, { backoff_base_s: 3, backoff_cap_s: 50 }, T0, PROCESSORS);
    await store().enqueueTasks(queue, many(10), T0);
    await store().enqueueTasks(
      queue,
      many(5, 10).map((t) => ({ ...t, priority: 5 })),
      T0,
    );
    await store().enqueueTasks(queue, many(4, 20), T0 + 1);
    // A task failed in the first pack (a retry due later: its rare_at), one completed (a gap in `st`).
    const first = await store().leaseTasks({ queue, max: 7, visibilityTimeoutS: 30, holder: "w" }, T0 + 2);
    expect(first.map((t) => t.priority)).toEqual([5, 5, 5, 5, 5, 0, 0]);
    await store().failTasks([{ id: first[5]!.id, leaseToken: first[5]!.leaseToken!, message: "x" }], T0 + 3);
    await store().completeTasks([{ id: first[6]!.id, leaseToken: first[6]!.leaseToken! }], T0 + 3);
    await expectFiguresFromSlots(queue, T0 + 3);

    // The failed slot's retry is not due at T0 + 4: the lease takes the pending slots after it, in order.
    const second = await store().leaseTasks({ queue, max: 9, visibilityTimeoutS: 20, holder: "v" }, T0 + 4);
    expect(second).toHaveLength(9);
    expect(second.map((t) => JSON.parse(t.payload).i)).toEqual([2, 3, 4, 5, 6, 7, 8, 9, 20]);
    expect(new Set(second.map((t) => t.leaseToken)).size).toBe(9);
    for (const t of second) {
      expect(t).toMatchObject({ state: "processing", attempts: 1, leaseHolder: "v", leaseExpiresAt: T0 + 4 + 20_000 });
      expect(t).toMatchObject({ leaseVisibilityS: 20, claimBy: null, startedAt: T0 + 4, updatedAt: T0 + 4 });
      expect(await store().getTask(t.id)).toEqual(t);
    }
    await expectFiguresFromSlots(queue, T0 + 4);
    // Untouched slots kept their own data: the failed one its error, the completed one its end.
    expect(await store().getTask(first[5]!.id)).toMatchObject({ state: "pending", attempts: 1 });
    expect(JSON.parse((await store().getTask(first[5]!.id))!.errors)).toHaveLength(1);
    expect(await store().getTask(first[6]!.id)).toMatchObject({ state: "completed", leaseHolder: "w" });
  });

  it("a provisional lease, and a lease at the last attempt (no leasable time: rare_at null)", async () => {
    const queue = uniqueQueue("lsql-last");
    await store().putQueueConfig(queue, { max_attempts: 1 }, T0, PROCESSORS);
    await store().enqueueTasks(queue, many(6), T0);
    const last = await store().leaseTasks({ queue, max: 3, visibilityTimeoutS: 30, holder: "w" }, T0 + 1);
    expect(last).toHaveLength(3);
    await expectFiguresFromSlots(queue, T0 + 1);
    expect((await packsOf(queue))[0]!.rare_at).toBeNull();
    const provisional = await store().leaseTasks(
      { queue, max: 3, visibilityTimeoutS: 30, holder: "p", provisional: true },
      T0 + 2,
    );
    expect(provisional.every((t) => t.claimBy !== null && t.claimBy <= T0 + 2 + 30_000)).toBe(true);
    await expectFiguresFromSlots(queue, T0 + 2);
    // Every slot processing: the pack is read by no lease until a claim window ends.
    const [row] = await packsOf(queue);
    expect(row!.next_at).toBe(provisional[0]!.claimBy);
    expect(await store().leaseTasks({ queue, max: 3, visibilityTimeoutS: 30, holder: "x" }, T0 + 3)).toEqual([]);
  });

  it("a second lease of a pack already leased appends its entry and keeps the first lease's: one entry a lease, a token a task", async () => {
    const queue = uniqueQueue("lsql-entries");
    await store().enqueueTasks(queue, many(4), T0);
    const one = await store().leaseTasks({ queue, max: 2, visibilityTimeoutS: 30, holder: "a" }, T0 + 1);
    const two = await store().leaseTasks({ queue, max: 2, visibilityTimeoutS: 60, holder: "b" }, T0 + 2);
    for (const t of [...one, ...two]) expect(await store().getTask(t.id)).toEqual(t);
    const [row] = await packsOf(queue);
    // One entry per lease, shared by the slots it took (`s`); each task's token is the entry's and its slot's.
    const entries = JSON.parse(row!.leases) as Array<{ k: string; s?: number; h: string }>;
    expect(entries.map((e) => [e.h, e.s])).toEqual([
      ["a", 1],
      ["b", 1],
    ]);
    expect(row!.lk).toBe("0011");
    expect(row!.st).toBe("rrrr");
    const tokens = [...one, ...two].map((t) => t.leaseToken!);
    expect(new Set(tokens).size).toBe(4);
    expect(tokens).toEqual([entries[0]!.k + "00", entries[0]!.k + "01", entries[1]!.k + "02", entries[1]!.k + "03"]);
    // A token is its own task's only: the first lease's for slot 0 does not fence slot 1, nor the bare entry's.
    for (const token of [tokens[0]!, entries[0]!.k]) {
      const [refused] = await store().completeTasks([{ id: one[1]!.id, leaseToken: token }], T0 + 3);
      expect(refused).toMatchObject({ ok: false });
    }
    // The first holder's fence still holds: its completion is accepted.
    const done = await store().completeTasks([{ id: one[0]!.id, leaseToken: one[0]!.leaseToken! }], T0 + 3);
    expect(done[0]).toMatchObject({ ok: true, state: "completed" });
    await expectFiguresFromSlots(queue, T0 + 3);
  });
});

describe("pack store: a shared lease entry through a splice and a whole write", () => {
  it("a splice appends the slot's own entry; the whole write after keeps only entries pointed at; repeats still known", async () => {
    const queue = uniqueQueue("lsql-shared");
    await store().enqueueTasks(queue, many(4), T0);
    const held = await store().leaseTasks({ queue, max: 4, visibilityTimeoutS: 30, holder: "w" }, T0 + 1);
    const ack = (i: number) => ({ id: held[i]!.id, leaseToken: held[i]!.leaseToken! });
    // One slot of four completed: a splice, its own entry appended, the other three still on the shared one.
    expect((await store().completeTasks([ack(0)], T0 + 2))[0]).toMatchObject({ ok: true, state: "completed" });
    let [row] = await packsOf(queue);
    expect(JSON.parse(row!.leases)).toHaveLength(2);
    expect(row!.lk).toBe("1000");
    // One failed for good (another splice), then the last two in one call: every live slot held, the whole write.
    const rest = await store().failTasks([{ ...ack(1), message: "no", retryable: false }], T0 + 3);
    expect(rest[0]).toMatchObject({ ok: true, state: "dead" });
    const done = await store().completeTasks([ack(2), ack(3)], T0 + 4);
    expect(done.map((o) => o.ok)).toEqual([true, true]);
    [row] = await packsOf(queue);
    const entries = JSON.parse(row!.leases) as Array<{ w?: string }>;
    // Only entries a slot points at are kept, each slot's own or shared, and every one is pointed at.
    const pointed = new Set([...row!.lk].map((c) => c.charCodeAt(0) - 48));
    expect([...pointed].sort((a, b) => a - b)).toEqual(entries.map((_, i) => i));
    expect(row!.st).toBe("cdcc");
    // Each ack's repeat is recognised by its own token, whichever write ended it.
    for (const i of [0, 2, 3]) {
      expect((await store().completeTasks([ack(i)], T0 + 5))[0]).toMatchObject({ ok: true, repeated: true });
    }
    await expectFiguresFromSlots(queue, T0 + 5);
  });
});

describe("pack store: entries written before leases shared theirs (one entry a slot, its token the entry's own)", () => {
  it("are still the holders' fences, by splice and by whole write, and render their tokens as before", async () => {
    const queue = uniqueQueue("lsql-old-entries");
    await store().enqueueTasks(queue, many(3), T0);
    const leased = await store().leaseTasks({ queue, max: 3, visibilityTimeoutS: 30, holder: "old" }, T0 + 1);
    // The pack as the lease wrote it before: an entry per slot, without `s`, its token 32 hex characters.
    const [row] = await packsOf(queue);
    const shared = (JSON.parse(row!.leases) as Array<Record<string, unknown>>)[0]!;
    const old = ["a", "b", "c"].map((c) => ({ ...shared, k: c.repeat(32), s: undefined }));
    await db().run(sql`UPDATE packs SET leases = jsonb(${JSON.stringify(old)}), lk = '012' WHERE id = ${row!.id}`);
    const ids = leased.map((t) => t.id);
    expect((await store().getTask(ids[1]!)).leaseToken).toBe("b".repeat(32));
    // Another slot's token is refused; each slot's own is accepted: one alone (a splice), then two (whole).
    const [refused] = await store().completeTasks([{ id: ids[0]!, leaseToken: "b".repeat(32) }], T0 + 2);
    expect(refused).toMatchObject({ ok: false });
    const [first] = await store().completeTasks([{ id: ids[0]!, leaseToken: "a".repeat(32) }], T0 + 3);
    expect(first).toMatchObject({ ok: true, state: "completed" });
    const rest = await store().completeTasks(
      [
        { id: ids[1]!, leaseToken: "b".repeat(32) },
        { id: ids[2]!, leaseToken: "c".repeat(32) },
      ],
      T0 + 4,
    );
    expect(rest.map((o) => o.ok)).toEqual([true, true]);
    expect((await packsOf(queue))[0]!.st).toBe("ccc");
  });
});

describe("pack store: the SQL lease writes no slot body (a slot's start and update are its lease entry's time)", () => {
  it("a first start kept through a heartbeat, a lapse and a lease by the rules; each slot's wait counted once", async () => {
    const queue = uniqueQueue("lsql-times");
    await store().enqueueTasks(queue, many(2), T0);
    const [first] = await store().leaseTasks({ queue, max: 1, visibilityTimeoutS: 1, holder: "w" }, T0 + 10);
    // The lease wrote the slot's state and lease entry, not its body; the task reads as leased at T0 + 10.
    const stored = JSON.parse((await packsOf(queue))[0]!.slots) as Array<Record<string, unknown>>;
    expect(stored[0]!.st).toBeUndefined();
    expect(await store().getTask(first!.id)).toMatchObject({ startedAt: T0 + 10, updatedAt: T0 + 10 });
    // A heartbeat (a write of the body as decoded) stores the start; the update is the beat's.
    const beat = await store().heartbeatTask({ id: first!.id, leaseToken: first!.leaseToken!, progress: 50 }, T0 + 20);
    expect(beat).toMatchObject({ id: first!.id, progress: 50 });
    expect((JSON.parse((await packsOf(queue))[0]!.slots) as Array<Record<string, unknown>>)[0]!.st).toBe(T0 + 10);
    expect(await store().getTask(first!.id)).toMatchObject({ startedAt: T0 + 10, updatedAt: T0 + 20 });
    // Lapsed long ago: the next lease takes it over by the rules (attempt 2), then the pack's other slot.
    const later = T0 + 3_600_000;
    const again = await store().leaseTasks({ queue, max: 2, visibilityTimeoutS: 30, holder: "w2" }, later);
    expect(again.map((t) => t.id)).toEqual([first!.id, expect.any(String)]);
    expect(again[0]).toMatchObject({ attempts: 2, startedAt: T0 + 10, updatedAt: later });
    expect(again[1]).toMatchObject({ attempts: 1, startedAt: later, updatedAt: later });
    await expectFiguresFromSlots(queue, later);
    // Three leases, two first starts: the wait is observed once per slot.
    const counts = await db().get<{ leased: number; waits: number }>(
      sql`SELECT sum(leased) AS leased, sum(wait_count) AS waits FROM task_counters WHERE queue = ${queue}`,
    );
    expect(counts).toEqual({ leased: 3, waits: 2 });
  });
});

describe("pack store: leasers racing for one pack take what is left, never computing again", () => {
  it("25 concurrent leases of 4 over one pack of 60: each lease is one batch, every task leased once", async () => {
    const queue = uniqueQueue("lsql-race");
    await store().enqueueTasks(queue, many(60), T0);
    const { db: d1, calls } = recordingD1(env.DB);
    const recorded = packTaskStore(openDb(d1));
    const batches = await Promise.all(
      Array.from({ length: 25 }, (_, w) =>
        recorded.leaseTasks({ queue, max: 4, visibilityTimeoutS: 30, holder: `w${w}` }, T0 + 1),
      ),
    );
    const ids = batches.flat().map((t) => t.id);
    expect(new Set(ids).size).toBe(60);
    expect(batches.filter((b) => b.length === 4)).toHaveLength(15);
    // One write batch per lease (the guarded JavaScript lease computed again once per lost race).
    const writes = calls.filter((c) => c.some((s) => /\bUPDATE packs\b/.test(s)));
    expect(writes).toHaveLength(25);
    await expectFiguresFromSlots(queue, T0 + 1);
  });

  it("rows written by a lease: one per pack taken from, plus the counters' row", async () => {
    const queue = uniqueQueue("lsql-rows");
    await store().enqueueTasks(queue, many(3), T0);
    await store().enqueueTasks(queue, many(3, 3), T0 + 1);
    const d1 = env.DB;
    const before = await db().get<{ c: number }>(sql`SELECT count(*) AS c FROM task_counters WHERE queue = ${queue}`);
    const meta: number[] = [];
    const metered = new Proxy(d1, {
      get(target, p) {
        if (p === "batch")
          return async (s: D1PreparedStatement[]) => {
            const results = await target.batch(s);
            meta.push(results.reduce((sum, r) => sum + (r.meta.rows_written ?? 0), 0));
            return results;
          };
        const value = target[p as keyof D1Database];
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const leased = await packTaskStore(openDb(metered)).leaseTasks(
      { queue, max: 5, visibilityTimeoutS: 30, holder: "w" },
      T0 + 2,
    );
    expect(leased).toHaveLength(5);
    expect(before!.c).toBe(1);
    expect(meta).toEqual([3]);
  });
});
