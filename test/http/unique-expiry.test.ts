import { describe, expect, it } from "vitest";
import { MAX_START_DEADLINE_S, MAX_UNIQUE_WINDOW_S } from "../../src/contracts/limits";
import { snapshot, uniqueQueue } from "../helpers";
import { call, enqueue, expectError, getTask, leaseOne, type Enqueued } from "./api";

// Start deadlines and uniqueness over time over HTTP (POST /v1/queues/{queue}/tasks): the fields, their
// answers, and every refusal a 400 naming the field with nothing stored. The engine's properties (the deadline
// under concurrent leasers, 960 concurrent keyed enqueues, debounce, singletons) are test/engine's.

const post = (queue: string, body: unknown) => call<Enqueued>("POST", `/v1/queues/${queue}/tasks`, { body });

describe("start deadlines over HTTP", () => {
  it("expires_in_s and start_by set the task's start_by; a task within its deadline is leased", async () => {
    const queue = uniqueQueue("deadline");
    const before = Date.now();
    const [a] = await enqueue(queue, { payload: 1, expires_in_s: 60 });
    const startBy = new Date(before + 3_600_000).toISOString();
    const [b] = await enqueue(queue, { payload: 2, start_by: startBy, delay_s: 10 });
    const taskA = await getTask(a!.id);
    expect(Date.parse(taskA.start_by!)).toBeGreaterThanOrEqual(before + 60_000);
    expect(Date.parse(taskA.start_by!)).toBeLessThanOrEqual(Date.now() + 60_000);
    expect((await getTask(b!.id)).start_by).toBe(startBy);
    const leased = await leaseOne(queue);
    expect(leased).toMatchObject({ id: a!.id, start_by: taskA.start_by });
  });

  it("answers a redrive of expired tasks (none here) instead of refusing the state", async () => {
    const res = await call("POST", `/v1/queues/${uniqueQueue("redrive-expired")}/redrive`, {
      body: { state: "expired" },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ redriven: 0, ids: [] });
  });

  const refused: Array<[string, unknown, RegExp]> = [
    ["a start_by in the past", { start_by: "2020-01-01T00:00:00Z" }, /^start_by: the start deadline is in the past/],
    [
      "a deadline not after the run time",
      { expires_in_s: 10, delay_s: 10 },
      /^expires_in_s: .*after the task's run time/,
    ],
    ["expires_in_s of 0", { expires_in_s: 0 }, /expires_in_s/],
    ["expires_in_s past the limit", { expires_in_s: MAX_START_DEADLINE_S + 1 }, /expires_in_s/],
    ["a start_by past the limit", { start_by: "2999-01-01T00:00:00Z" }, /start_by: at most/],
    [
      "start_by with expires_in_s",
      { start_by: "2999-01-01T00:00:00Z", expires_in_s: 5 },
      /expires_in_s: give start_by or expires_in_s/,
    ],
    ["a batch's deadline by its place", { tasks: [{}, { expires_in_s: 1, delay_s: 5 }] }, /^tasks\[1\]\.expires_in_s:/],
  ];
  for (const [label, body, message] of refused) {
    it(`refuses ${label}, naming the field, storing nothing`, async () => {
      const queue = uniqueQueue("deadline-bad");
      await enqueue(queue, { payload: "there before" });
      const before = await snapshot(queue);
      expectError(await post(queue, body), 400, "invalid_request", message);
      expect(await snapshot(queue)).toEqual(before);
    });
  }
});

describe("uniqueness over time over HTTP", () => {
  it("an idempotency key within its window answers the first task, deduplicated", async () => {
    const queue = uniqueQueue("idem-http");
    const body = { payload: { order: 7 }, idempotency: { key: "order-7", window_s: 600 } };
    const first = await post(queue, body);
    expect(first.status, first.text).toBe(201);
    const again = await post(queue, { ...body, payload: { order: 8 } });
    expect(again.body.tasks).toEqual([{ id: first.body.tasks[0]!.id, state: "pending", deduplicated: true }]);
  });

  it("a debounce answers the waiting task and moves its run time; a singleton skips while one waits", async () => {
    const queue = uniqueQueue("debounce-http");
    const [first] = await enqueue(queue, { payload: 1, debounce: { key: "k", window_s: 30 } });
    const runAt = Date.parse((await getTask(first!.id)).run_at);
    const [again] = await enqueue(queue, { payload: 2, debounce: { key: "k", window_s: 60 } });
    expect(again).toEqual({ id: first!.id, state: "pending", deduplicated: true });
    const task = await getTask(first!.id);
    expect(task.payload).toBe(2);
    expect(Date.parse(task.run_at)).toBeGreaterThan(runAt);

    const [one] = await enqueue(queue, { singleton: { key: "s" } });
    const [two] = await enqueue(queue, { singleton: { key: "s", while_running: "skip" } });
    expect(two).toEqual({ id: one!.id, state: "pending", deduplicated: true });
  });

  const refused: Array<[string, unknown, RegExp]> = [
    ["a window of 0", { idempotency: { key: "k", window_s: 0 } }, /idempotency\.window_s/],
    [
      "a window past the limit",
      { idempotency: { key: "k", window_s: MAX_UNIQUE_WINDOW_S + 1 } },
      /idempotency\.window_s/,
    ],
    ["a fractional window", { debounce: { key: "k", window_s: 1.5 } }, /debounce\.window_s/],
    ["an empty key", { idempotency: { key: "", window_s: 5 } }, /idempotency\.key/],
    [
      "a debounce with a delay",
      { debounce: { key: "k", window_s: 5 }, delay_s: 3 },
      /^debounce: a debounce sets the run time/,
    ],
    [
      "two kinds of key",
      { idempotency: { key: "k", window_s: 5 }, singleton: { key: "k" } },
      /^singleton: one of idempotency, debounce, singleton/,
    ],
    ["an unknown singleton policy", { singleton: { key: "k", while_running: "cancel" } }, /singleton\.while_running/],
    [
      "a key with a dedupe key",
      { idempotency: { key: "k", window_s: 5 }, dedupe_key: "d" },
      /^idempotency: not with dedupe_key/,
    ],
    [
      "a key with a task id",
      { id: "01JD3Z8Q9V6Y4T2N1R0M5K7H8G", singleton: { key: "k" } },
      /^singleton: not with an id/,
    ],
  ];
  for (const [label, body, message] of refused) {
    it(`refuses ${label}, naming the field, storing nothing`, async () => {
      const queue = uniqueQueue("unique-bad");
      await enqueue(queue, { payload: "there before" });
      const before = await snapshot(queue);
      expectError(await post(queue, body), 400, "invalid_request", message);
      expect(await snapshot(queue)).toEqual(before);
    });
  }
});
