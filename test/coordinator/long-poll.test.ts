import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { TaskRow } from "../../src/db/schema";
import { enqueueTasks } from "../../src/engine/enqueue";
import { queueDb, row, uniqueQueue } from "../helpers";
import { coordinator, untilWaiting } from "../support/coordinator";

function leaseRequest(queue: string, waitMs: number, holder: string | null = null, max = 1) {
  return { queue, max, visibilityTimeoutS: 30, holder, waitMs };
}

/** Settles to "pending" if the promise has not resolved by the time the coordinator answered a round trip. */
async function stillPending<T>(promise: Promise<T>, queue: string): Promise<boolean> {
  const marker = Symbol("pending");
  await coordinator(queue).waiting(); // one round trip to the DO: anything it already resolved has arrived
  return (await Promise.race([promise, Promise.resolve(marker)])) === marker;
}

/** Enqueues due tasks directly in D1 (no notification), due a second ago by the real clock. */
async function enqueueDue(queue: string, count: number): Promise<string[]> {
  const now = Date.now() - 1000;
  const { tasks } = await enqueueTasks(
    await queueDb(queue),
    queue,
    Array.from({ length: count }, (_, i) => ({ payload: { n: i } })),
    now,
  );
  return tasks.map((t) => t.id);
}

describe("long-poll lease through the coordinator", () => {
  it("holds a lease on an empty queue until tasks are enqueued and notified, then hands them over", async () => {
    const queue = uniqueQueue("lp");
    const stub = coordinator(queue);
    const pending = stub.lease(leaseRequest(queue, 15_000, "w1"));
    await untilWaiting(queue, 1);
    expect(await stillPending(pending, queue)).toBe(true);

    const [id] = await enqueueDue(queue, 1);
    await stub.notify({ queue, runAt: Date.now() });
    const leased = await pending;

    expect(leased.map((t) => t.id)).toEqual([id]);
    expect(leased[0]).toMatchObject({ state: "processing", attempts: 1, leaseHolder: "w1" });
    expect(leased[0]!.leaseToken).toMatch(/^[0-9a-f]{32}(?:[0-9A-Z]{2})?$/);
    const stored = await row(id!);
    expect(stored).toMatchObject({ state: "processing", attempts: 1, leaseToken: leased[0]!.leaseToken });
    expect(stored.leaseExpiresAt).toBeGreaterThan(Date.now());
    expect(await stub.waiting()).toBe(0);
  });

  it("serves several waiters newest first, never handing a task to two of them", async () => {
    const queue = uniqueQueue("lp");
    const stub = coordinator(queue);
    const first = stub.lease(leaseRequest(queue, 15_000, "first"));
    await untilWaiting(queue, 1);
    const second = stub.lease(leaseRequest(queue, 15_000, "second"));
    await untilWaiting(queue, 2);
    const third = stub.lease(leaseRequest(queue, 15_000, "third"));
    await untilWaiting(queue, 3);

    // Two tasks for three waiters: the two newest get one each, newest first; the oldest waits on.
    const ids = await enqueueDue(queue, 2);
    await stub.notify({ queue, runAt: Date.now() });
    const [c, b] = await Promise.all([third, second]);
    expect(c.map((t) => t.id)).toEqual([ids[0]]);
    expect(b.map((t) => t.id)).toEqual([ids[1]]);
    expect(await stillPending(first, queue)).toBe(true);
    expect(await stub.waiting()).toBe(1);

    const [late] = await enqueueDue(queue, 1);
    await stub.notify({ queue, runAt: Date.now() });
    const a = await first;
    expect(a.map((t) => t.id)).toEqual([late]);

    const all: TaskRow[] = [...a, ...b, ...c];
    expect(new Set(all.map((t) => t.id)).size).toBe(3);
    expect(new Set(all.map((t) => t.leaseToken)).size).toBe(3);
    for (const task of all) {
      expect(await row(task.id)).toMatchObject({ state: "processing", attempts: 1, leaseToken: task.leaseToken });
    }
    expect(await stub.waiting()).toBe(0);
  });

  it("answers concurrent waiters with disjoint batches when many tasks arrive at once", async () => {
    const queue = uniqueQueue("lp");
    const stub = coordinator(queue);
    const waiters = [];
    for (let i = 0; i < 4; i++) {
      waiters.push(stub.lease(leaseRequest(queue, 15_000, `w${i}`, 3)));
      await untilWaiting(queue, i + 1);
    }
    const ids = await enqueueDue(queue, 10);
    // Two notifications at once: serving is serialised, so no waiter is answered twice.
    await Promise.all([stub.notify({ queue, runAt: Date.now() }), stub.notify({ queue, runAt: Date.now() })]);
    const batches = await Promise.all(waiters);
    // Newest first: w3 takes the first three in lease order, then w2, w1, and w0 the last one.
    expect(batches.map((b) => b.length)).toEqual([1, 3, 3, 3]);
    expect([...batches].reverse().flatMap((b) => b.map((t) => t.id))).toEqual(ids);
    for (const id of ids) expect(await row(id)).toMatchObject({ state: "processing", attempts: 1 });
    expect(await stub.waiting()).toBe(0);
  });

  it("answers [] when nothing arrives within waitMs", async () => {
    const queue = uniqueQueue("lp");
    const stub = coordinator(queue);
    const started = Date.now();
    // This waits a real second: the timeout is the behaviour under test.
    const leased = await stub.lease(leaseRequest(queue, 1000));
    const elapsed = Date.now() - started;
    expect(leased).toEqual([]);
    expect(elapsed).toBeGreaterThanOrEqual(900);
    expect(elapsed).toBeLessThan(10_000);
    expect(await stub.waiting()).toBe(0);

    // The timed-out waiter is gone: a task enqueued afterwards stays pending for the next lease.
    const [id] = await enqueueDue(queue, 1);
    await stub.notify({ queue, runAt: Date.now() });
    expect(await row(id!)).toMatchObject({ state: "pending", attempts: 0, leaseToken: null });
  });

  it("leases at once, without waiting, when tasks are already due", async () => {
    const queue = uniqueQueue("lp");
    const stub = coordinator(queue);
    const ids = await enqueueDue(queue, 2);
    const started = Date.now();
    const leased = await stub.lease(leaseRequest(queue, 20_000, "eager", 5));
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(leased.map((t) => t.id)).toEqual(ids);
    expect(await stub.waiting()).toBe(0);
    for (const id of ids) expect(await row(id)).toMatchObject({ state: "processing", leaseHolder: "eager" });
  });

  it("waitMs 0 on an empty queue answers [] without queueing a waiter", async () => {
    const queue = uniqueQueue("lp");
    const stub = coordinator(queue);
    expect(await stub.lease(leaseRequest(queue, 0))).toEqual([]);
    expect(await stub.waiting()).toBe(0);
  });
});

describe("long-poll lease over HTTP", () => {
  const headers = { authorization: "Bearer test-token", "content-type": "application/json" };

  const worker = exports.default;

  function post(path: string, body: unknown): Promise<Response> {
    return worker.fetch(
      new Request(`http://edgeq.test${path}`, { method: "POST", headers, body: JSON.stringify(body) }),
    );
  }

  it("a lease with wait_s started before an enqueue is answered with that task", async () => {
    const queue = uniqueQueue("http");
    const leaseResponse = post(`/v1/queues/${queue}/lease`, { wait_s: 5, max: 5, holder: "http-worker" });
    await untilWaiting(queue, 1);

    const enqueued = await post(`/v1/queues/${queue}/tasks`, { payload: { hello: "world" } });
    expect(enqueued.status).toBe(201);
    const { tasks: created } = (await enqueued.json()) as { tasks: Array<{ id: string }> };
    expect(created).toHaveLength(1);

    const response = await leaseResponse;
    expect(response.status).toBe(200);
    const { tasks } = (await response.json()) as {
      tasks: Array<{ id: string; state: string; payload: unknown; lease_token: string; lease_holder: string }>;
    };
    expect(tasks).toHaveLength(1);
    expect(tasks[0]).toMatchObject({
      id: created[0]!.id,
      state: "processing",
      payload: { hello: "world" },
      lease_holder: "http-worker",
    });
    expect(await row(created[0]!.id)).toMatchObject({ state: "processing", leaseToken: tasks[0]!.lease_token });
    expect(await coordinator(queue).waiting()).toBe(0);
  });
});

describe("a long poll whose client went away", () => {
  it("is withdrawn by withdrawPoll: answered with nothing, and the next task goes to the waiter behind it", async () => {
    const queue = uniqueQueue("withdraw-poll");
    const gone = coordinator(queue).lease({ ...leaseRequest(queue, 20_000, "gone"), waiterId: "w-gone" });
    await untilWaiting(queue, 1);
    const alive = coordinator(queue).lease({ ...leaseRequest(queue, 20_000, "alive"), waiterId: "w-alive" });
    await untilWaiting(queue, 2);

    expect(await coordinator(queue).withdrawPoll({ waiterId: "w-gone" })).toBe(true);
    expect(await gone).toEqual([]);
    expect(await coordinator(queue).waiting()).toBe(1);
    expect(await coordinator(queue).withdrawPoll({ waiterId: "w-gone" })).toBe(false); // already gone

    const [id] = await enqueueDue(queue, 1);
    await coordinator(queue).notify({ queue, runAt: Date.now() });
    const served = await alive;
    expect(served.map((t) => [t.id, t.leaseHolder])).toEqual([[id, "alive"]]);
    expect(await row(id!)).toMatchObject({ state: "processing", leaseHolder: "alive", attempts: 1 });
  });
});

describe("a long poll over HTTP whose client disconnects", () => {
  it("leaves the coordinator's line (request.signal withdraws it)", async () => {
    const queue = uniqueQueue("abort");
    const client = new AbortController();
    const request = new Request(`http://edgeq.test/v1/queues/${queue}/lease`, {
      method: "POST",
      headers: { authorization: "Bearer test-token", "content-type": "application/json" },
      body: JSON.stringify({ max: 1, wait_s: 20 }),
      signal: client.signal,
    });
    const response = exports.default.fetch(request).catch(() => null);
    await untilWaiting(queue, 1);
    client.abort();
    await response;
    await untilWaiting(queue, 0);
    // A task enqueued now is not leased for the departed client: it stays pending.
    const [id] = await enqueueDue(queue, 1);
    await coordinator(queue).notify({ queue, runAt: Date.now() });
    expect(await row(id!)).toMatchObject({ state: "pending", attempts: 0 });
  });
});
