import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { ulid } from "ulid";
import { describe, expect, it } from "vitest";
import { MIN_RETENTION_S } from "../../../src/contracts/limits";
import { openDb } from "../../../src/db/client";
import { sumCounters } from "../../../src/engine/counters";
import { packTaskStore } from "../../../src/engine/packs/pack-store";
import { SPILL_AT_BYTES } from "../../../src/engine/packs/spill";
import { PROCESSORS, T0, uniqueQueue } from "../../helpers";
import { meteredD1 } from "../../support/metered-d1";
import { recordingD1 } from "./recording-d1";

// The pack store's own mechanics of upkeep (src/engine/packs/upkeep.ts, retention.ts): a pack is deleted as a
// whole, with its side rows, only once none of its slots is live; the reaper finds lapsed slots by the walk of
// the live index, within its bound, and writes each pack with its counters in one batch. The port's properties
// (reap, re-lease, dead, prune) are test/engine/upkeep.test.ts's, on both stores.

const store = () => packTaskStore(openDb(env.DB));
const db = () => openDb(env.DB);
const packOf = (taskId: string) => taskId.slice(0, 24);
const packExists = async (taskId: string) =>
  (await db().get(sql`SELECT 1 AS one FROM packs WHERE id = ${packOf(taskId)}`)) !== undefined;

/** Leases `max` of the queue's tasks at `now` for 30 s. */
const leaseAt = (queue: string, now: number, max = 100) =>
  store().leaseTasks({ queue, max, visibilityTimeoutS: 30, holder: "w" }, now);

describe("pack store: retention deletes a finished pack only, with its side rows", () => {
  it("a pack with one live slot among finished ones survives every prune; a finished pack of the same time goes with its key, id and spill rows", async () => {
    // Today's clock plus minutes (pack ids are time-ordered: the prune walks those below its cutoff), on a
    // queue that keeps finished tasks MIN_RETENTION_S (every other file's queue keeps them for days).
    const base = Date.now();
    const queue = uniqueQueue("pack-prune");
    await store().putQueueConfig(queue, { retention_s: MIN_RETENTION_S }, base, PROCESSORS);
    // A finished pack: a dedupe key, a client id, a result that spills.
    const finished = await store().enqueueTasks(
      queue,
      [{ dedupeKey: "gone-key" }, { id: ulid() }, { payload: 1 }],
      base,
    );
    const leased = await leaseAt(queue, base);
    const big = "x".repeat(SPILL_AT_BYTES + 1);
    await store().completeTasks(
      leased.map((t) => ({ id: t.id, leaseToken: t.leaseToken!, result: big })),
      base + 1,
    );
    // A pack of three: two completed, one still pending (live = 1).
    const mixed = await store().enqueueTasks(queue, [{}, {}, {}], base + 2);
    const two = await leaseAt(queue, base + 2, 2);
    await store().completeTasks(
      two.map((t) => ({ id: t.id, leaseToken: t.leaseToken! })),
      base + 3,
    );
    const spare = mixed.tasks[2]!.id;
    expect(await db().get(sql`SELECT live, finished_at FROM packs WHERE id = ${packOf(spare)}`)).toEqual({
      live: 1,
      finished_at: null,
    });
    const gone = finished.tasks.map((t) => t.id);
    const anchor = gone[0]!;
    expect(
      await db().get(sql`SELECT count(*) AS n FROM pack_spill WHERE substr(task_id, 1, 24) = ${packOf(anchor)}`),
    ).toEqual({ n: 3 }); // each result, keyed by its slot's address (a client-id task's too)
    const after = base + 2 * MIN_RETENTION_S * 1000;
    for (let i = 0; i < 100 && (await packExists(anchor)); i++) await store().pruneByRetention(after);
    expect(await packExists(anchor)).toBe(false);
    expect(await db().get(sql`SELECT count(*) AS n FROM pack_keys WHERE queue = ${queue}`)).toEqual({ n: 0 });
    expect(await db().get(sql`SELECT count(*) AS n FROM pack_ids WHERE queue = ${queue}`)).toEqual({ n: 0 });
    expect(
      await db().get(sql`SELECT count(*) AS n FROM pack_spill WHERE substr(task_id, 1, 24) = ${packOf(anchor)}`),
    ).toEqual({ n: 0 });
    // The mixed pack is past its retention by its finished slots' times, but one slot is live: kept whole.
    for (let i = 0; i < 5; i++) await store().pruneByRetention(after);
    expect(await packExists(spare)).toBe(true);
    expect((await store().getTask(mixed.tasks[0]!.id)).state).toBe("completed");
    expect((await store().getTask(spare)).state).toBe("pending");
    // The key is free for a new task (its row went with its pack). Enqueued at today's time, not `after`: pack
    // ids take the latest time their generator has seen (pack-ids.ts), and a later test's packs must not
    // carry a future time the prune's cutoff would skip.
    const [again] = (await store().enqueueTasks(queue, [{ dedupeKey: "gone-key" }], base + 4)).tasks;
    expect(again).toMatchObject({ deduplicated: false });
  });
});

describe("pack store: the prune's cost", () => {
  it("deletes a finished pack of 100 tasks writing 1 row (and at most the cursor's; the D1 store: 100)", async () => {
    const base = Date.now();
    const queue = uniqueQueue("pack-prune-cost");
    await store().putQueueConfig(queue, { retention_s: MIN_RETENTION_S }, base, PROCESSORS);
    const { tasks } = await store().enqueueTasks(
      queue,
      Array.from({ length: 100 }, () => ({})),
      base,
    );
    const leased = await leaseAt(queue, base);
    await store().completeTasks(
      leased.map((t) => ({ id: t.id, leaseToken: t.leaseToken! })),
      base + 1,
    );
    const meter = meteredD1(env.DB);
    const measured = packTaskStore(openDb(meter.db));
    const after = base + 2 * MIN_RETENTION_S * 1000;
    for (let i = 0; i < 100 && (await packExists(tasks[0]!.id)); i++) await measured.pruneByRetention(after);
    expect(await packExists(tasks[0]!.id)).toBe(false);
    expect(meter.usage.rowsWritten).toBeGreaterThanOrEqual(1);
    expect(meter.usage.rowsWritten).toBeLessThanOrEqual(2);
  });
});

describe("pack store: the reaper", () => {
  it("finds lapsed slots of a pack by the walk, reaps up to `limit` per call and the rest at the next, and writes each batch with its counters", async () => {
    const queue = uniqueQueue("pack-reap");
    const own = ulid(T0);
    await store().enqueueTasks(queue, [{ maxAttempts: 1 }, { maxAttempts: 1 }, { maxAttempts: 1, id: own }], T0);
    const leased = await leaseAt(queue, T0);
    expect(leased).toHaveLength(3);
    const { db: d1, calls } = recordingD1(env.DB);
    const recorded = packTaskStore(openDb(d1));
    const now = T0 + 30_001;
    const mine = (r: { queue: string }) => r.queue === queue;
    const first = (await recorded.reapExpiredLeases(now, 1)).reaped.filter(mine);
    const writes = calls.filter((c) => c.some((s) => /^\s*UPDATE packs/i.test(s)));
    // One batch: the guard, the pack, its counters.
    expect(writes.length).toBeGreaterThan(0);
    expect(writes.every((batch) => batch.some((s) => /INSERT INTO task_counters/i.test(s)))).toBe(true);
    let rest: typeof first = [];
    for (let i = 0; i < 5 && first.length + rest.length < 3; i++) {
      rest = [...rest, ...(await store().reapExpiredLeases(now)).reaped.filter(mine)];
    }
    const reaped = [...first, ...rest];
    // Each once, dead, the client-id task answered by its own id.
    expect(reaped.map((r) => r.id).sort()).toEqual(leased.map((t) => t.id).sort());
    expect(reaped.every((r) => r.state === "dead")).toBe(true);
    expect(reaped.map((r) => r.id)).toContain(own);
    const [sums] = await sumCounters(db(), { queue });
    expect(sums).toMatchObject({ leased: 3, failed: 3, dead: 3 });
    expect(await db().get(sql`SELECT live, finished_at FROM packs WHERE id = ${packOf(leased[0]!.id)}`)).toEqual({
      live: 0,
      finished_at: now,
    });
  });

  it("hands an unclaimed provisional lease back refunded once it expired, found by the walk", async () => {
    const queue = uniqueQueue("pack-reap-poll");
    const [task] = (await store().enqueueTasks(queue, [{}], T0)).tasks;
    await store().leaseTasks({ queue, max: 1, visibilityTimeoutS: 60, holder: "poll", provisional: true }, T0);
    const mine = (r: { queue: string }) => r.queue === queue;
    expect((await store().reapExpiredLeases(T0 + 59_999)).reaped.filter(mine)).toEqual([]);
    const { reaped, unclaimed } = await store().reapExpiredLeases(T0 + 60_000);
    expect(reaped.filter(mine)).toEqual([{ id: task!.id, queue, state: "pending", run_at: T0 }]);
    expect(unclaimed).toContain(task!.id);
    expect(await store().getTask(task!.id)).toMatchObject({ state: "pending", attempts: 0, errors: "[]" });
  });

  it("reaps 100 lapsed leases of one pack writing 2 rows: the pack and one counter row (the D1 store: 201, each row and its live-index entry)", async () => {
    const queue = uniqueQueue("pack-reap-cost");
    const { tasks } = await store().enqueueTasks(
      queue,
      Array.from({ length: 100 }, () => ({})),
      T0,
    );
    await leaseAt(queue, T0);
    const meter = meteredD1(env.DB);
    const { reaped } = await packTaskStore(openDb(meter.db)).reapLapsedLeases(
      tasks.map((t) => t.id),
      T0 + 30_000,
    );
    expect(reaped).toHaveLength(100);
    expect(meter.usage.rowsWritten).toBe(2);
  });
});
