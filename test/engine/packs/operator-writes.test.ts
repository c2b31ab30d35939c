import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { openDb } from "../../../src/db/client";
import { d1TaskStore } from "../../../src/engine/d1-store";
import { packTaskStore, type PackCore } from "../../../src/engine/packs/pack-store";
import { T0, uniqueQueue } from "../../helpers";
import { meteredD1 } from "../../support/metered-d1";
import { recordingD1 } from "./recording-d1";

// The pack store's operator writes (src/engine/packs/operator-writes.ts) count what the D1 store counts, in
// the batch of the write they count. Their answers are held by test/engine/cancel-redrive.test.ts; the
// counter sums are read with the D1 store's sumCounters (the same task_counters table), which the pack store
// does not offer yet (CounterReads).

const d1Store = () => d1TaskStore(openDb(env.DB));

/** Cancels each way, ends each cancel-requested lease by each holder write, revives, cancels the queue. */
async function cancelEveryWay(store: PackCore, queue: string): Promise<void> {
  const { tasks } = await store.enqueueTasks(
    queue,
    Array.from({ length: 6 }, (_, i) => ({ payload: { i } })),
    T0,
  );
  const leased = await store.leaseTasks({ queue, max: 5, visibilityTimeoutS: 30, holder: "w" }, T0 + 1);
  const [a, b, c, d, e] = leased.map((t) => ({ id: t.id, leaseToken: t.leaseToken! }));
  await store.cancelTask(tasks[5]!.id, T0 + 2);
  for (const t of leased) await store.cancelTask(t.id, T0 + 3);
  await expect(store.heartbeatTask({ ...a!, extendS: 30 }, T0 + 4)).rejects.toMatchObject({
    code: "task_cancelled",
  });
  await store.completeTasks([{ ...b!, result: { no: 1 } }], T0 + 5);
  await store.failTasks([{ ...c!, message: "stopped" }], T0 + 6);
  await store.releaseTasks([d!], T0 + 7);
  await store.extendLeases([e!], T0 + 8);
  await store.retryTask(tasks[5]!.id, T0 + 9);
  await store.redriveQueue(queue, { state: "cancelled" }, T0 + 10);
  await store.cancelQueueTasks(queue, {}, T0 + 11);
}

/** A queue's counter sums, without its name. */
async function sums(queue: string) {
  const rows = await d1Store().sumCounters({ queue });
  return rows.map((row) => ({ ...row, queue: "" }));
}

describe("pack store: operator writes count as the D1 store counts", () => {
  it("cancel, a requested cancel ended by each holder write, retry, redrive and a queue cancel", async () => {
    const onD1 = uniqueQueue("op-d1");
    const onPacks = uniqueQueue("op-packs");
    await cancelEveryWay(d1Store(), onD1);
    await cancelEveryWay(packTaskStore(openDb(env.DB)), onPacks);
    const [expected] = await sums(onD1);
    // 1 pending at once, 5 ended by their holder, 6 revived and cancelled again by the queue cancel.
    expect(expected).toMatchObject({ enqueued: 6, leased: 5, cancelled: 12 });
    expect(await sums(onPacks)).toEqual([expected]);
  });

  it("writes a cancel's counters in the batch of the pack it changes", async () => {
    const queue = uniqueQueue("op-batch");
    const { db: d1, calls } = recordingD1(env.DB);
    const recorded = packTaskStore(openDb(d1));
    const { tasks } = await recorded.enqueueTasks(queue, [{}, {}], T0);
    const [leased] = await recorded.leaseTasks({ queue, max: 1, visibilityTimeoutS: 30, holder: "w" }, T0 + 1);
    await recorded.cancelTask(leased!.id, T0 + 2);
    calls.length = 0;
    const writes = () => calls.filter((c) => c.some((s) => /^\s*(INSERT|UPDATE|DELETE)/i.test(s)));
    await recorded.cancelTask(tasks.find((t) => t.id !== leased!.id)!.id, T0 + 3);
    await recorded.completeTasks([{ id: leased!.id, leaseToken: leased!.leaseToken! }], T0 + 4);
    expect(writes()).toHaveLength(2);
    for (const batch of writes()) {
      expect(batch.some((s) => s.includes("UPDATE packs"))).toBe(true);
      expect(batch.some((s) => s.includes("INSERT INTO task_counters"))).toBe(true);
    }
  });
});

describe("pack store: rows an operator write writes (D1's rows_written)", () => {
  it("one row per pack changed, plus one counter row when it ends tasks; one more when a pack becomes live", async () => {
    const meter = meteredD1(env.DB);
    const store = packTaskStore(openDb(meter.db));
    const rows = async (write: () => Promise<unknown>) => {
      meter.reset();
      await write();
      return meter.usage.rowsWritten;
    };
    const queue = uniqueQueue("op-rows");
    const { tasks } = await store.enqueueTasks(
      queue,
      Array.from({ length: 100 }, () => ({})),
      T0,
    );
    const [held] = await store.leaseTasks({ queue, max: 1, visibilityTimeoutS: 30, holder: "w" }, T0 + 1);
    const pending = tasks.find((t) => t.id !== held!.id)!.id;
    // The pack's row and the counter row (the D1 store: the same 2).
    expect(await rows(() => store.cancelTask(pending, T0 + 2))).toBe(2);
    // The pack's row only (the D1 store: 2, the task's row and its live-index entry).
    expect(await rows(() => store.cancelTask(held!.id, T0 + 2))).toBe(1);
    expect(await rows(() => store.retryTask(pending, T0 + 3))).toBe(1);
    // 99 pending cancelled at once: the pack and one counter row (the D1 store: 100, a row per task).
    expect(await rows(() => store.cancelQueueTasks(queue, {}, T0 + 4))).toBe(2);
    expect(await rows(() => store.redriveQueue(queue, { state: "cancelled" }, T0 + 5))).toBe(1);
    // A pack of one: its cancel finishes the pack (its live-index entry's deletion is not billed, its
    // finished-index entry, packs_done, is a row); its retry makes it live again, the live entry inserted.
    const [one] = (await store.enqueueTasks(queue, [{}], T0)).tasks;
    expect(await rows(() => store.cancelTask(one!.id, T0 + 2))).toBe(3);
    expect(await rows(() => store.retryTask(one!.id, T0 + 3))).toBe(2);
  });
});
