import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { openDb } from "../../../src/db/client";
import type { HolderWriteHow } from "../../../src/engine/packs/acks";
import { completePackTasks } from "../../../src/engine/packs/holder-writes";
import { PROCESSORS, uniqueQueue } from "../../helpers";
import { meteredD1 } from "../../support/metered-d1";
import { countersOf, db, expectFiguresFromSlots, many, packsOf, store, T as T_EQUAL } from "./pack-state";
import { isWrite, recordingD1 } from "./recording-d1";

// The holder's writes as slot splices evaluated at write time (src/engine/packs/slot-splice.ts) under
// contention: holders acking slots of one pack each commit their first batch, the fence holds at write time,
// and a splice whose own slot changed under it is computed again whole.

/** This file's own time range: the day after ack-splice.test.ts's. */
const T = T_EQUAL + 86_400_000;

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
    // The operator's cancel lands after the holder read the slot (one statement: the slot's pack and its
    // queue's config), before its first batch (the write) reaches D1.
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
    const writes = rec.calls.filter(isWrite);
    expect(writes).toHaveLength(2);
    expect(writes[0]!.some((s) => s.includes("nw.st"))).toBe(true);
    expect(writes[1]!.some((s) => /UPDATE packs SET next_at/.test(s))).toBe(true);
    await expectFiguresFromSlots(queue, T + 3);
  });
});
