import { expect, it } from "vitest";
import { uniqueQueue } from "../helpers";
import { clockRange } from "../support/clock-range";
import { storeFixtures } from "./conformance/fixtures";
import { describeStore } from "./conformance/store-kinds";

// Start deadlines (src/engine/expire.ts, src/engine/redelivery.ts). The expiry pass works over every queue
// of the database, so the file works in a clock range of its own (test/support/clock-range.ts), each test
// ten days from the next, and looks at its own queue's tasks only.
const clock = clockRange("engine/expiry");
const at = (n: number) => clock.day(n * 10);

describeStore("start deadlines", (kind) => {
  const { store, enqueueMany, enqueueOne, lease, leaseOne, row } = storeFixtures(kind);

  it("a task is leased before its deadline, never at or after it, and the pass ends it expired", async () => {
    const t = at(1);
    const queue = uniqueQueue("expiry");
    const early = await enqueueOne(queue, { payload: { n: 1 }, startBy: t + 1000 }, t);
    expect((await leaseOne(queue, t + 999)).id).toBe(early);

    const late = await enqueueOne(queue, { payload: { n: 2 }, startBy: t + 2000 }, t);
    expect(await lease(queue, t + 2000)).toEqual([]);
    expect(await lease(queue, t + 5000)).toEqual([]);
    const expired = await store().expireOverdueTasks(t + 2000);
    expect(expired.filter((e) => e.queue === queue)).toEqual([{ id: late, queue, type: "default" }]);
    expect(await row(late)).toMatchObject({ state: "expired", finishedAt: t + 2000, startedAt: null });
    // The one that started before its deadline is not expired by it.
    expect((await row(early)).state).toBe("processing");
  });

  it("concurrent leasers at the deadline and the expiry pass: a task is leased before it or expired, never both, never leased at it", async () => {
    const t = at(2);
    const deadline = t + 10_000;
    const queue = uniqueQueue("expiry-race");
    const ids = await enqueueMany(
      queue,
      Array.from({ length: 40 }, (_, i) => ({ payload: { i }, startBy: deadline })),
      t,
    );
    // Leasers a millisecond before the deadline, at it and after it, and the pass at it, all at once.
    const calls = await Promise.all([
      ...Array.from({ length: 6 }, (_, w) => lease(queue, deadline - 1, 3, `before-${w}`)),
      ...Array.from({ length: 6 }, (_, w) => lease(queue, deadline, 5, `at-${w}`)),
      ...Array.from({ length: 4 }, (_, w) => lease(queue, deadline + 1 + w, 5, `after-${w}`)),
      store().expireOverdueTasks(deadline),
    ]);
    const leasedBatches = calls.slice(0, -1) as Awaited<ReturnType<typeof lease>>[];
    const expired = (calls.at(-1) as Awaited<ReturnType<ReturnType<typeof store>["expireOverdueTasks"]>>)
      .filter((e) => e.queue === queue)
      .map((e) => e.id);
    const leased = leasedBatches.flat();
    // Only the leasers before the deadline got tasks (at most 3 each; none if the pass ran first), each once.
    expect(leased.every((task) => task.leaseHolder!.startsWith("before-"))).toBe(true);
    expect(new Set(leased.map((task) => task.id)).size).toBe(leased.length);
    expect(leased.length).toBeLessThanOrEqual(18);
    // Every task is exactly one of leased or expired.
    const leasedIds = new Set(leased.map((task) => task.id));
    expect(expired.filter((id) => leasedIds.has(id))).toEqual([]);
    expect(new Set([...leasedIds, ...expired])).toEqual(new Set(ids));
    for (const id of ids) {
      expect((await row(id)).state).toBe(leasedIds.has(id) ? "processing" : "expired");
    }
  });

  it("a task that started before its deadline is retried after it, and no pass expires it", async () => {
    const t = at(3);
    const queue = uniqueQueue("expiry-retry");
    const id = await enqueueOne(queue, { startBy: t + 1000, maxAttempts: 3 }, t);
    const leased = await leaseOne(queue, t + 1);
    await store().failTasks([{ id, leaseToken: leased.leaseToken, message: "again", retryAfterS: 5 }], t + 2);
    expect((await store().expireOverdueTasks(t + 6000)).map((e) => e.id)).not.toContain(id);
    expect((await leaseOne(queue, t + 6000)).id).toBe(id);
  });

  it("expired is counted, and redrive and retry revive it without its deadline", async () => {
    const t = at(4);
    const queue = uniqueQueue("expiry-redrive");
    const ids = await enqueueMany(
      queue,
      [
        { type: "a", startBy: t + 10 },
        { type: "a", startBy: t + 10 },
      ],
      t,
    );
    await store().expireOverdueTasks(t + 10);
    const [sums] = await store().sumCounters({ queue });
    expect(sums).toMatchObject({ queue, type: "a", enqueued: 2, expired: 2 });
    expect((await store().queueStats(queue, {}, t + 10)).counts).toMatchObject({ expired: 2, pending: 0 });
    expect((await store().listTasks(queue, { state: "expired", limit: 10 })).tasks.map((x) => x.id)).toEqual(ids);

    const retried = await store().retryTask(ids[0]!, t + 20);
    expect(retried).toMatchObject({ state: "pending", startBy: null, finishedAt: null });
    const { ids: redriven } = await store().redriveQueue(queue, { state: "expired" }, t + 20);
    expect(redriven).toEqual([ids[1]]);
    expect((await lease(queue, t + 30)).map((x) => x.id).sort()).toEqual([...ids].sort());
  });

  it("a pass reads only what is due: tasks with later deadlines, and tasks that started, stay as they are", async () => {
    const t = at(5);
    const queue = uniqueQueue("expiry-later");
    const [soon, later] = await enqueueMany(queue, [{ startBy: t + 100 }, { startBy: t + 100_000 }], t);
    expect((await store().expireOverdueTasks(t + 100)).filter((e) => e.queue === queue).map((e) => e.id)).toEqual([
      soon,
    ]);
    expect((await store().expireOverdueTasks(t + 200)).filter((e) => e.queue === queue)).toEqual([]);
    expect((await row(later!)).state).toBe("pending");
    expect((await leaseOne(queue, t + 300)).id).toBe(later);
  });
});
