import { expect, it } from "vitest";
import type { FlowConfig } from "../../src/contracts/flow";
import { PROCESSORS, T0, uniqueQueue } from "../helpers";
import { storeFixtures } from "./conformance/fixtures";
import { describeStore } from "./conformance/store-kinds";

// Flow control's rates (token buckets, with injected time) and pauses (docs/flow-control.md). Times: this
// file's own range, from T0 + 7 days.
const T = T0 + 7 * 86_400_000;

describeStore("flow control: rates and pauses", (kind) => {
  const { store, enqueueMany, lease } = storeFixtures(kind);

  async function flowQueue(flow: FlowConfig): Promise<string> {
    const queue = uniqueQueue("flowr");
    await store().putQueueConfig(queue, { flow }, T, PROCESSORS);
    return queue;
  }

  /** Leases every 100 ms of injected time for `seconds`, completing each at once; starts per second. */
  async function leaseContinuously(queue: string, from: number, seconds: number): Promise<number[]> {
    const perSecond = Array.from({ length: seconds }, () => 0);
    for (let ms = 0; ms < seconds * 1000; ms += 100) {
      const leased = await lease(queue, from + ms, 100);
      perSecond[Math.floor(ms / 1000)]! += leased.length;
      await store().completeTasks(
        leased.map((t) => ({ id: t.id, leaseToken: t.leaseToken! })),
        from + ms,
      );
    }
    return perSecond;
  }

  it("a key at 10/s with a burst of 5 gets its burst, then 10 starts per second of injected time, never more", async () => {
    const queue = await flowQueue({ keys: { api: { rate: { count: 10, per: "second", burst: 5 } } } });
    await enqueueMany(
      queue,
      Array.from({ length: 400 }, () => ({ key: "api" })),
      T,
    );
    await enqueueMany(
      queue,
      Array.from({ length: 50 }, () => ({ key: "free" })),
      T,
    );
    const perSecond = await leaseContinuously(queue, T + 1000, 10);
    // "free" has no limit: all 50 in the first lease; "api": 5 at once, then 1 per 100 ms.
    const api = perSecond.map((n, i) => (i === 0 ? n - 50 : n));
    expect(api[0]).toBeLessThanOrEqual(5 + 10);
    for (const n of api.slice(1)) expect(n).toBe(10);
    const total = api.reduce((a, b) => a + b, 0);
    expect(total).toBeGreaterThanOrEqual(100 * 0.95);
    expect(total).toBeLessThanOrEqual(100 * 1.05 + 5);
  });

  it("a queue-wide rate holds over all keys and unkeyed tasks together", async () => {
    const queue = await flowQueue({ rate: { count: 60, per: "minute", burst: 3 } });
    await enqueueMany(
      queue,
      [...Array.from({ length: 20 }, (_, i) => ({ key: `k${i % 4}` })), ...Array.from({ length: 10 }, () => ({}))],
      T,
    );
    expect(await lease(queue, T + 1, 100)).toHaveLength(3);
    expect(await lease(queue, T + 2, 100)).toHaveLength(0);
    expect(await lease(queue, T + 1001, 100)).toHaveLength(1);
    expect(await lease(queue, T + 10_001, 100)).toHaveLength(3);
  });

  it("a paused queue accepts tasks and hands none out; running tasks finish; resume hands them out", async () => {
    const queue = uniqueQueue("flowp");
    await enqueueMany(queue, [{}, { key: "a" }], T);
    const [running] = await lease(queue, T + 1, 1);
    await store().setFlowPaused(queue, null, true, T + 2);
    await enqueueMany(queue, [{}, { key: "b" }], T + 3);
    expect(await lease(queue, T + 4, 100)).toEqual([]);
    const [done] = await store().completeTasks([{ id: running!.id, leaseToken: running!.leaseToken! }], T + 5);
    expect(done).toMatchObject({ ok: true, state: "completed" });
    expect((await store().readQueueFlow(queue, 10, T + 5)).paused).toBe(true);
    await store().setFlowPaused(queue, null, false, T + 6);
    expect(await lease(queue, T + 7, 100)).toHaveLength(3);
    // Resumed with nothing else set: the queue has no flow config again (its leases are today's statement).
    expect((await store().getQueueConfig(queue)).flow).toBeNull();
  });

  it("a paused key holds only its own tasks; a config written meanwhile keeps the pause", async () => {
    const queue = await flowQueue({ default: { concurrency: 10 } });
    await enqueueMany(queue, [{ key: "a" }, { key: "a" }, { key: "b" }, {}], T);
    await store().setFlowPaused(queue, "a", true, T + 1);
    await store().putQueueConfig(queue, { flow: null }, T + 2, PROCESSORS);
    const leased = await lease(queue, T + 3, 100);
    expect(leased.map((t) => t.flowKey).sort()).toEqual(["b", null]);
    const { keys } = await store().readQueueFlow(queue, 10, T + 3);
    expect(keys.find((k) => k.key === "a")).toMatchObject({ paused: true, due: 2, running: 0 });
    await store().setFlowPaused(queue, "a", false, T + 4);
    expect(await lease(queue, T + 5, 100)).toHaveLength(2);
  });
});
