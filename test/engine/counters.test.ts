import { expect, it } from "vitest";
import { COUNTER_MINUTES_KEPT_S } from "../../src/contracts/limits";
import { bucketIndex, HISTOGRAM_BOUNDS_S } from "../../src/db/histogram-buckets";
import { minuteOf } from "../../src/engine/counters";
import { PROCESSORS, T0, uniqueQueue } from "../helpers";
import { describeStore } from "./conformance/store-kinds";
import { clockRange } from "../support/clock-range";

// Every state change adds what it changed to the per-minute counters, once (src/engine/counters.ts): what
// /metrics, health and the charts read instead of tasks.
describeStore(
  "task counters",
  (kind) => {
    const store = () => kind.store();

    /** The one (queue, type) row of sums, all time. */
    async function sums(queue: string, type = "default") {
      const rows = await store().sumCounters({ queue });
      return rows.find((r) => r.type === type);
    }

    it("put a lease's waits and a completion's run times in the buckets bucketIndex names, at and past each bound", async () => {
      // The lease and the completion count in SQL inside their batch; recordCounters counts in JS: same buckets.
      const queue = uniqueQueue();
      const edges = [0, ...HISTOGRAM_BOUNDS_S.flatMap((b) => [b * 1000, b * 1000 + 1])];
      const now = T0 + 30_000_000;
      await store().enqueueTasks(
        queue,
        edges.map((w) => ({ runAt: now - w })),
        T0,
      );
      const leased = await store().leaseTasks({ queue, max: 100, visibilityTimeoutS: 86_400, holder: "w" }, now);
      expect(leased).toHaveLength(edges.length);
      // Each task runs for one of the edge times: completed one by one.
      for (const [k, task] of leased.entries()) {
        await store().completeTasks([{ id: task.id, leaseToken: task.leaseToken! }], now + edges[k]!);
      }
      const expected = (h: "wait" | "run") => {
        const buckets: Record<string, number> = {};
        for (let i = 0; i <= HISTOGRAM_BOUNDS_S.length; i++) buckets[`${h}_b${i}`] = 0;
        for (const w of edges) buckets[`${h}_b${bucketIndex(w)}`]! += 1;
        return { ...buckets, [`${h}_count`]: edges.length, [`${h}_sum_ms`]: edges.reduce((x, y) => x + y, 0) };
      };
      expect(await sums(queue)).toMatchObject({
        leased: edges.length,
        completed: edges.length,
        ...expected("wait"),
        ...expected("run"),
      });
    });

    it("count each transition once, per queue and type, with wait and run times", async () => {
      const queue = uniqueQueue();
      await store().enqueueTasks(queue, [{ type: "a" }, { type: "a" }, { type: "a" }, { type: "b" }], T0);
      // A repeated id creates nothing and counts nothing.
      const [first] = (await store().enqueueTasks(queue, [{ type: "a" }], T0)).tasks;
      await store().enqueueTasks(queue, [{ id: first!.id, type: "a" }], T0);
      // Wait 2 s, then lease all five.
      const leased = await store().leaseTasks({ queue, max: 10, visibilityTimeoutS: 30, holder: "w" }, T0 + 2000);
      expect(leased).toHaveLength(5);
      const [a1, a2, a3, a4] = leased.filter((t) => t.type === "a");
      const b = leased.find((t) => t.type === "b")!;
      // Run 10 s: two complete, one fails permanently (dead), one fails and retries, b is released by a cancel.
      const t = T0 + 12_000;
      await store().completeTasks(
        [a1!, a2!].map((x) => ({ id: x.id, leaseToken: x.leaseToken! })),
        t,
      );
      // Repeating an applied complete changes nothing and counts nothing.
      await store().completeTasks([{ id: a1!.id, leaseToken: a1!.leaseToken! }], t);
      await store().failTasks([{ id: a3!.id, leaseToken: a3!.leaseToken!, message: "bad", retryable: false }], t);
      await store().failTasks([{ id: a4!.id, leaseToken: a4!.leaseToken!, message: "flaky" }], t);
      await store().cancelTask(b.id, t); // processing: cancel requested, not yet cancelled
      await store().completeTasks([{ id: b.id, leaseToken: b.leaseToken! }], t); // ends cancelled

      const a = await sums(queue, "a");
      expect(a).toMatchObject({ enqueued: 4, leased: 4, completed: 2, failed: 2, dead: 1, cancelled: 0 });
      expect(await sums(queue, "b")).toMatchObject({ enqueued: 1, leased: 1, completed: 0, cancelled: 1 });
      // Four first leases of type a, each waited 2 s; three ended (2 completed, 1 dead) after 10 s.
      expect(a).toMatchObject({ wait_count: 4, wait_sum_ms: 8000, run_count: 3, run_sum_ms: 30_000 });
      expect(a![`wait_b${bucketIndex(2000)}`]).toBe(4);
      expect(a![`run_b${bucketIndex(10_000)}`]).toBe(3);

      // The retried task's second lease is not a first lease: no second wait observation.
      await store().leaseTasks({ queue, max: 10, visibilityTimeoutS: 30, holder: "w" }, t + 3_600_000);
      expect(await sums(queue, "a")).toMatchObject({ leased: 5, wait_count: 4 });
    });

    it("count each enqueued task once, whether the call made its ids (counted in the insert's batch) or the client did", async () => {
      const queue = uniqueQueue();
      // Made ids: a key held by a live task, or twice in one call, creates nothing and counts nothing.
      await store().enqueueTasks(queue, [{ dedupeKey: "k" }, { dedupeKey: "k" }, { type: "b" }], T0);
      await store().enqueueTasks(queue, [{ dedupeKey: "k" }, {}], T0);
      expect(await sums(queue)).toMatchObject({ enqueued: 2 });
      expect(await sums(queue, "b")).toMatchObject({ enqueued: 1 });
      // Client ids, the same id twice in one call and again in a second call in the same millisecond.
      const id = "01JD0000000000000000000000";
      await store().enqueueTasks(queue, [{ id }, { id }, { id: "01JD0000000000000000000001", type: "b" }], T0);
      await store().enqueueTasks(queue, [{ id }], T0);
      expect(await sums(queue)).toMatchObject({ enqueued: 3 });
      expect(await sums(queue, "b")).toMatchObject({ enqueued: 2 });
      // A task without max_attempts takes its queue's, read by the insert.
      await store().putQueueConfig(queue, { max_attempts: 7 }, T0, PROCESSORS);
      const [own, set] = (await store().enqueueTasks(queue, [{}, { maxAttempts: 2 }], T0)).tasks;
      expect((await store().getTask(own!.id)).maxAttempts).toBe(7);
      expect((await store().getTask(set!.id)).maxAttempts).toBe(2);
    });

    it("count an expired lease the reaper ends as a failed attempt, and dead when attempts are exhausted", async () => {
      const queue = uniqueQueue();
      await store().putQueueConfig(queue, { max_attempts: 1 }, T0, PROCESSORS);
      await store().enqueueTasks(queue, [{}], T0);
      await store().leaseTasks({ queue, max: 1, visibilityTimeoutS: 1, holder: "w" }, T0);
      const { reaped } = await store().reapExpiredLeases(T0 + 5000);
      expect(reaped.filter((r) => r.queue === queue)).toEqual([expect.objectContaining({ state: "dead" })]);
      expect(await sums(queue)).toMatchObject({ leased: 1, failed: 1, dead: 1, run_count: 1, run_sum_ms: 5000 });
    });

    it("fold minutes past COUNTER_MINUTES_KEPT_S into the totals row without changing any total", async () => {
      const queue = uniqueQueue();
      // This file's clock range (the tests share one D1; a fold takes the oldest minutes of every queue).
      const base = clockRange("engine/counters").day(1);
      for (let m = 0; m < 3; m++) await store().enqueueTasks(queue, [{}, {}], base + m * 60_000);
      const before = await sums(queue);
      expect(before).toMatchObject({ enqueued: 6 });
      const later = base + COUNTER_MINUTES_KEPT_S * 1000 + 10 * 60_000;
      while ((await store().foldOldCounters(later)).folded > 0);
      expect(await sums(queue)).toEqual(before);
      // Recent minutes are kept as they are.
      await store().enqueueTasks(queue, [{}], later);
      await store().foldOldCounters(later);
      const recent = await store().sumCounters({ queue, since: later });
      expect(recent).toEqual([expect.objectContaining({ enqueued: 1 })]);
      expect(minuteOf(later)).toBeGreaterThan(0);
    });
  },
  { needs: ["core", "operator", "queueConfig", "upkeep", "counters", "counterFolds"] },
);
