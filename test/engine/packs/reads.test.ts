import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { LIVE_FRONT_MIN_PENDING } from "../../../src/contracts/limits";
import { openDb } from "../../../src/db/client";
import { packTaskStore } from "../../../src/engine/packs/pack-store";
import { T0, uniqueQueue } from "../../helpers";
import { meteredD1 } from "../../support/metered-d1";

// The pack store's own mechanics of its reads (src/engine/packs/listing.ts, queue-reads.ts, live-front.ts,
// counter-folds.ts): a listing and a queue's stats read that queue's packs through its indexes, never every
// pack of the database; the live front stops at its bound of due slots; nothing of a pack waits for the
// counter fold. The port's properties are test/engine's (stats, presence, ordering, live-front, counters,
// counters-in-row), on both stores.

const store = () => packTaskStore(openDb(env.DB));

/** The pack store over a metered binding: rows read and written by what `run` does. */
async function measured<T>(run: (s: ReturnType<typeof store>) => Promise<T>) {
  const meter = meteredD1(env.DB);
  const value = await run(packTaskStore(openDb(meter.db)));
  return { value, read: meter.usage.rowsRead, written: meter.usage.rowsWritten };
}

/** `n` packs of one task each (one call: a distinct priority per task makes a pack per task), all finished. */
async function finishedPacks(queue: string, n: number, now: number): Promise<string[]> {
  const { tasks } = await store().enqueueTasks(
    queue,
    Array.from({ length: n }, (_, i) => ({ priority: i })),
    now,
  );
  const leased = await store().leaseTasks({ queue, max: n, visibilityTimeoutS: 60, holder: "w" }, now + 1);
  await store().completeTasks(
    leased.map((t) => ({ id: t.id, leaseToken: t.leaseToken! })),
    now + 2,
  );
  return tasks.map((t) => t.id);
}

describe("pack store: listings and stats read one queue's packs, through its indexes", () => {
  it("a listing of live tasks reads the live packs only; a first page the packs it lists; stats the queue's own packs", async () => {
    const queue = uniqueQueue("list-bounded");
    const other = uniqueQueue("list-other");
    // 60 finished packs of this queue, 60 live packs of another, and 3 pending tasks here (one pack).
    const done = await finishedPacks(queue, 60, T0);
    await store().enqueueTasks(
      other,
      Array.from({ length: 60 }, (_, i) => ({ priority: i })),
      T0,
    );
    const pending = (await store().enqueueTasks(queue, [{}, {}, {}], T0 + 10)).tasks.map((t) => t.id);

    const live = await measured((s) => s.listTasks(queue, { state: "pending", limit: 10 }));
    expect(live.value.tasks.map((t) => t.id)).toEqual(pending);
    // The live index's entry and row of the one live pack, the pack read whole, the cursor probe: a few rows,
    // whatever the finished packs here or the packs of other queues (every pack read: 120+).
    console.log(`rows read: pending listing ${live.read}`);
    expect(live.read).toBeLessThan(15);

    const page = await measured((s) => s.listTasks(queue, { limit: 5 }));
    expect(page.value.tasks.map((t) => t.id)).toEqual(done.slice(0, 5));
    expect(page.value.next_cursor).toBe(done[4]);
    // Six finished entries (the page and one to know there is more), six packs, the live entry.
    console.log(`rows read: first page of 5 ${page.read}`);
    expect(page.read).toBeLessThan(30);

    // Page on to the end: every task once, in id order, the live ones after the finished (newer ids).
    const seen: string[] = [];
    let cursor: string | undefined;
    for (;;) {
      const next = await store().listTasks(queue, { limit: 7, cursor });
      seen.push(...next.tasks.map((t) => t.id));
      if (next.next_cursor === null) break;
      cursor = next.next_cursor;
    }
    expect(seen).toEqual([...done, ...pending]);

    const stats = await measured((s) => s.queueStats(queue, {}, T0 + 20));
    expect(stats.value).toMatchObject({ counts: { completed: 60, pending: 3 }, due: 3, oldest_due_at: T0 + 10 });
    // This queue's 61 packs (an index entry and a row each), not the other queue's 60.
    console.log(`rows read: stats ${stats.read}`);
    expect(stats.read).toBeLessThan(61 * 2 + 10);
    expect(stats.written).toBe(0);
  });

  it("a listing of a finished state finds finished slots in live packs too, and skips packs with none", async () => {
    const queue = uniqueQueue("list-mixed");
    // Three finished packs, then a live pack of three: one completed, one pending, one cancelled.
    const done = await finishedPacks(queue, 3, T0);
    const { tasks } = await store().enqueueTasks(queue, [{}, {}, {}], T0 + 10);
    const [first] = await store().leaseTasks({ queue, max: 1, visibilityTimeoutS: 60, holder: "w" }, T0 + 11);
    await store().completeTasks([{ id: first!.id, leaseToken: first!.leaseToken! }], T0 + 12);
    await store().cancelTask(tasks[2]!.id, T0 + 13);
    const completed = await store().listTasks(queue, { state: "completed", limit: 10 });
    expect(completed.tasks.map((t) => t.id)).toEqual([...done, first!.id]);
    expect((await store().listTasks(queue, { state: "cancelled", limit: 10 })).tasks.map((t) => t.id)).toEqual([
      tasks[2]!.id,
    ]);
    expect((await store().listTasks(queue, { state: "dead", limit: 10 })).tasks).toEqual([]);
    // A cursor inside a pack resumes at its next slot.
    const after = await store().listTasks(queue, { limit: 10, cursor: tasks[0]!.id });
    expect(after.tasks.map((t) => t.id)).toEqual([tasks[1]!.id, tasks[2]!.id]);
    const pendingOnly = await store().listTasks(queue, { state: "pending", limit: 10, cursor: done[2] });
    expect(pendingOnly.tasks.map((t) => t.id)).toEqual([tasks[1]!.id]);
  });
});

describe("pack store: the live front stops at its bound", () => {
  it("walks LIVE_FRONT_MIN_PENDING due slots of a segment and says it stopped short; all of them when asked", async () => {
    const queue = uniqueQueue("front-bound");
    // 15 packs of 100 due tasks, and one pack not yet due.
    await store().enqueueTasks(
      queue,
      Array.from({ length: 1_500 }, () => ({})),
      T0,
    );
    await store().enqueueTasks(queue, [{ runAt: T0 + 3_600_000 }], T0);
    const now = T0 + 1_000;
    const capped = await measured((s) => s.readLiveFront(now, { dueCountFor: () => 0 }));
    const front = capped.value.find((f) => f.queue === queue)!;
    expect(front).toMatchObject({ capped: true, oldest_due_at: T0, leasable: true, lapsed: [] });
    expect(front.due).toBeGreaterThanOrEqual(LIVE_FRONT_MIN_PENDING);
    expect(front.due).toBeLessThan(LIVE_FRONT_MIN_PENDING + 100);
    const whole = (await store().readLiveFront(now, { dueCountFor: () => 5_000 })).find((f) => f.queue === queue)!;
    expect(whole).toMatchObject({ capped: false, due: 1_500 });
    console.log(`rows read: capped front ${capped.read}`);
    expect(capped.written).toBe(0);
    await store().cancelQueueTasks(queue, {}, now);
  });

  it("counts a retried slot at its own run time, and finds a lapsed lease's task id", async () => {
    const queue = uniqueQueue("front-retry");
    await store().enqueueTasks(queue, [{}, {}, {}], T0);
    const [a, b] = await store().leaseTasks({ queue, max: 2, visibilityTimeoutS: 10, holder: "w" }, T0);
    await store().failTasks([{ id: a!.id, leaseToken: a!.leaseToken!, message: "again" }], T0 + 1);
    const retryAt = (await store().getTask(a!.id)).runAt;
    expect(retryAt).toBeGreaterThan(T0 + 1);
    // Before the retry is due: one due (the third task), no lease lapsed.
    const before = (await store().readLiveFront(T0 + 1_000)).find((f) => f.queue === queue)!;
    expect(before).toMatchObject({ due: 1, lease_expired: 0, lapsed: [] });
    // Past it (a backoff of at most 10 s) and past b's expiry at T0 + 10 s: two due, b's lease lapsed.
    const after = (await store().readLiveFront(T0 + 11_000)).find((f) => f.queue === queue)!;
    expect(after).toMatchObject({ due: 2, lease_expired: 1 });
    expect(after.lapsed).toEqual([{ id: b!.id, expired: true, overrun: false }]);
    expect(await store().nextRunAt(queue, T0 + 1)).toBe(retryAt);
    // With leases: b's lease is leasable again after its expiry backoff (10 s base), the retry sooner.
    expect(await store().nextRunAt(queue, retryAt, { leases: true })).toBe(T0 + 10_000 + 10_000);
    await store().cancelQueueTasks(queue, {}, T0 + 12_000);
  });
});

describe("pack store: nothing of a pack waits for the counter fold", () => {
  it("a pack's life is counted whole when its writes commit; a fold adds nothing, reads and writes nothing", async () => {
    const queue = uniqueQueue("fold-packs");
    await finishedPacks(queue, 3, T0);
    const counted = await store().sumCounters({ queue });
    expect(counted).toEqual([expect.objectContaining({ enqueued: 3, leased: 3, completed: 3 })]);
    const fold = await measured((s) => s.foldCountersInRows(T0 + 3_600_000));
    expect(fold).toEqual({ value: { tasks: 0, more: false }, read: 0, written: 0 });
    expect(await store().sumCounters({ queue })).toEqual(counted);
  });
});
