import { describe, expect, it } from "vitest";
import { DEFAULT_QUEUE_CONFIG } from "../../src/engine/queue-config";
import { sql } from "drizzle-orm";
import { taskDb, uniqueQueue } from "../helpers";
import {
  call,
  complete,
  deadTask,
  enqueue,
  enqueueOne,
  expectError,
  fail,
  getTask,
  ISO,
  lease,
  leaseOne,
  type Enqueued,
  type Task,
} from "./api";

/** Asserts an ISO time lies within [from, to] ms. */
function expectTimeWithin(iso: string | null | undefined, from: number, to: number): void {
  expect(iso).toMatch(ISO);
  const ms = Date.parse(iso!);
  expect(ms).toBeGreaterThanOrEqual(from);
  expect(ms).toBeLessThanOrEqual(to);
}

describe("quick start over HTTP", () => {
  it("enqueues, leases and completes a task", async () => {
    const queue = uniqueQueue("life");
    const t0 = Date.now();
    const created = await call<Enqueued>("POST", `/v1/queues/${queue}/tasks`, {
      body: { type: "email.send", payload: { to: "a@example.com" } },
    });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      tasks: [{ id: expect.stringMatching(/^[0-9A-Z]{26}$/), state: "pending", deduplicated: false }],
    });
    const id = created.body.tasks[0]!.id;
    const pending = await getTask(id);
    expect(pending).toMatchObject({
      id,
      queue,
      type: "email.send",
      state: "pending",
      payload: { to: "a@example.com" },
    });
    expect(pending).toMatchObject({
      attempts: 0,
      max_attempts: DEFAULT_QUEUE_CONFIG.max_attempts,
      errors: [],
      lease_expires_at: null,
    });
    expectTimeWithin(pending.created_at, t0, Date.now());

    const leasedAt = Date.now();
    const [leased, ...rest] = await lease(queue, { max: 10, holder: "worker-1" });
    const leasedBy = Date.now();
    expect(rest).toEqual([]);
    expect(leased).toMatchObject({
      id,
      state: "processing",
      attempts: 1,
      lease_holder: "worker-1",
      payload: { to: "a@example.com" },
    });
    expect(leased!.lease_token).toMatch(/^[0-9a-f]{32}(?:[0-9A-Z]{2})?$/);
    for (const key of ["run_at", "created_at", "updated_at", "started_at"] as const) expect(leased![key]).toMatch(ISO);
    const timeoutMs = DEFAULT_QUEUE_CONFIG.visibility_timeout_s * 1000;
    expectTimeWithin(leased!.lease_expires_at, leasedAt + timeoutMs, leasedBy + timeoutMs);
    expect(await lease(queue)).toEqual([]);

    const done = await complete(id, leased!.lease_token, { sent: true });
    expect([done.status, done.body]).toEqual([
      200,
      { id, state: "completed", run_at: null, children: [], repeated: false },
    ]);
    const finished = await getTask(id);
    expect(finished).toMatchObject({
      state: "completed",
      result: { sent: true },
      progress: 100,
      lease_expires_at: null,
    });
    expect(finished.finished_at).toMatch(ISO);
    expect(await lease(queue)).toEqual([]);
  });

  it("enqueues a batch in input order and leases by priority, then FIFO", async () => {
    const queue = uniqueQueue("life");
    const payloads = ["low", "high", "mid-1", "mid-2", "negative"];
    const priorities = [0, 10, 5, 5, -3];
    const created = await enqueue(queue, {
      tasks: payloads.map((payload, i) => ({ payload, priority: priorities[i] })),
    });
    expect(created).toHaveLength(5);
    expect(new Set(created.map((t) => t.id)).size).toBe(5);
    for (const [i, t] of created.entries()) expect((await getTask(t.id)).payload).toBe(payloads[i]);

    const order: unknown[] = [];
    for (let i = 0; i < 3; i++) order.push((await leaseOne(queue)).payload);
    order.push(...(await lease(queue, { max: 10 })).map((t) => t.payload));
    expect(order).toEqual(["high", "mid-1", "mid-2", "low", "negative"]);
  });

  it("holds delayed tasks (delay_s, future run_at) and leases past-due ones", async () => {
    const queue = uniqueQueue("life");
    const t0 = Date.now();
    const delayed = await enqueueOne(queue, { delay_s: 3600, payload: "delayed" });
    const at = new Date(Date.now() + 30 * 86_400_000).toISOString();
    const scheduled = await enqueueOne(queue, { run_at: at, payload: "scheduled" });
    const overdue = await enqueueOne(queue, { run_at: "2020-01-01T00:00:00.000Z", payload: "overdue" });
    expectTimeWithin((await getTask(delayed)).run_at, t0 + 3_600_000, Date.now() + 3_600_000);
    expect((await getTask(scheduled)).run_at).toBe(at);

    expect((await lease(queue, { max: 10 })).map((t) => t.id)).toEqual([overdue]);
    // Once its time has come (moved in D1; its clock cannot be faked), the delayed task is leased.
    await (await taskDb(delayed)).run(sql`UPDATE tasks SET run_at = ${Date.now() - 1} WHERE id = ${delayed}`);
    expect((await lease(queue, { max: 10 })).map((t) => t.id)).toEqual([delayed]);
  });
});

describe("failures, retries and redrive", () => {
  it("retries a failure at once with retry_after_s 0 and buries it after max_attempts, keeping every error", async () => {
    const queue = uniqueQueue("fail");
    const id = await enqueueOne(queue, { max_attempts: 2 });
    const first = await leaseOne(queue);
    const retry = await fail(id, { lease_token: first.lease_token, error: "boom 1", retry_after_s: 0 });
    expect(retry.status).toBe(200);
    expect(retry.body).toMatchObject({ id, state: "pending" });
    expect(Date.parse(retry.body.run_at!)).toBeLessThanOrEqual(Date.now());

    const second = await leaseOne(queue);
    expect(second).toMatchObject({ id, attempts: 2 });
    expect(second.lease_token).not.toBe(first.lease_token);
    const dead = await fail(id, { lease_token: second.lease_token, error: "boom 2", retry_after_s: 0 });
    expect([dead.status, dead.body]).toEqual([200, { id, state: "dead", run_at: null, children: [], repeated: false }]);
    expect(await lease(queue)).toEqual([]);

    const task = await getTask(id);
    expect(task).toMatchObject({ state: "dead", attempts: 2, lease_expires_at: null });
    expect(task.finished_at).toMatch(ISO);
    expect(task.errors).toEqual([
      { attempt: 1, at: expect.stringMatching(ISO), message: "boom 1", kind: "error" },
      { attempt: 2, at: expect.stringMatching(ISO), message: "boom 2", kind: "error" },
    ]);
  });

  it("backs off a retryable failure by the queue's base delay with jitter", async () => {
    const queue = uniqueQueue("fail");
    const id = await enqueueOne(queue);
    const leased = await leaseOne(queue);
    const before = Date.now();
    const res = await fail(id, { lease_token: leased.lease_token, error: "upstream 503" });
    const base = DEFAULT_QUEUE_CONFIG.backoff_base_s * 1000;
    expectTimeWithin(res.body.run_at, before + base * 0.8, Date.now() + base);
    expect(await lease(queue)).toEqual([]);
  });

  it("buries a permanent failure at once, even with attempts left, and truncates long messages", async () => {
    const queue = uniqueQueue("fail");
    const id = await enqueueOne(queue, { max_attempts: 5 });
    const leased = await leaseOne(queue);
    const res = await fail(id, { lease_token: leased.lease_token, error: "x".repeat(5000), retryable: false });
    expect(res.body).toEqual({ id, state: "dead", run_at: null, children: [], repeated: false });
    const [entry] = (await getTask(id)).errors;
    expect(entry).toMatchObject({ attempt: 1, kind: "permanent" });
    expect(entry!.message).toHaveLength(2000);
  });

  it("retries a dead task now with attempts reset and its history kept; only dead or cancelled", async () => {
    const queue = uniqueQueue("retry");
    const id = await enqueueOne(queue, { max_attempts: 1 });
    const leased = await leaseOne(queue);
    await fail(id, { lease_token: leased.lease_token, error: "boom" });
    const res = await call<Task>("POST", `/v1/tasks/${id}/retry`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      id,
      state: "pending",
      attempts: 0,
      finished_at: null,
      errors: [{ message: "boom" }],
    });
    expect(await leaseOne(queue)).toMatchObject({ id, attempts: 1 });
    expectError(await call("POST", `/v1/tasks/${id}/retry`), 409, "invalid_transition", /processing/);
    expect((await getTask(id)).state).toBe("processing");
  });

  it("redrives a queue's dead tasks, optionally of one group, and cancelled ones on request", async () => {
    const queue = uniqueQueue("redrive");
    await enqueue(queue, {
      tasks: [{ group: "a" }, { group: "a" }, { group: "b" }].map((t) => ({ ...t, max_attempts: 1 })),
    });
    const leased = await lease(queue, { max: 3 });
    for (const t of leased) await fail(t.id, { lease_token: t.lease_token, error: "boom" });
    const cancelled = await enqueueOne(queue, { group: "a" });
    await call("POST", `/v1/tasks/${cancelled}/cancel`);
    const groupA = leased.filter((t) => t.group === "a").map((t) => t.id);
    const groupB = leased.filter((t) => t.group === "b").map((t) => t.id);

    const a = await call<{ redriven: number; ids: string[] }>("POST", `/v1/queues/${queue}/redrive`, {
      body: { group: "a" },
    });
    expect([a.status, a.body.redriven, a.body.ids.sort()]).toEqual([200, 2, groupA.sort()]);
    for (const id of groupA) expect(await getTask(id)).toMatchObject({ state: "pending", attempts: 0 });
    expect((await getTask(groupB[0]!)).state).toBe("dead");
    expect((await getTask(cancelled)).state).toBe("cancelled");

    const rest = await call<{ redriven: number; ids: string[] }>("POST", `/v1/queues/${queue}/redrive`, { body: {} });
    expect(rest.body).toEqual({ redriven: 1, ids: groupB });
    const revived = await call<{ redriven: number; ids: string[] }>("POST", `/v1/queues/${queue}/redrive`, {
      body: { state: "cancelled" },
    });
    expect(revived.body).toEqual({ redriven: 1, ids: [cancelled] });
    expect((await lease(queue, { max: 10 })).length).toBe(4);
  });
});

describe("dedupe and client ids", () => {
  it("returns the live task for a repeated dedupe_key, and creates a new one once it finished", async () => {
    const queue = uniqueQueue("dedupe");
    const [first] = await enqueue(queue, { dedupe_key: "user-7", payload: 1 });
    const [second] = await enqueue(queue, { dedupe_key: "user-7", payload: 2 });
    expect(second).toEqual({ id: first!.id, state: "pending", deduplicated: true });
    expect((await getTask(first!.id)).payload).toBe(1);
    const [inBatch, other] = await enqueue(queue, { tasks: [{ dedupe_key: "user-7" }, { dedupe_key: "user-8" }] });
    expect(inBatch).toEqual({ id: first!.id, state: "pending", deduplicated: true });
    expect(other!.deduplicated).toBe(false);

    const leased = await leaseOne(queue);
    const [whileLeased] = await enqueue(queue, { dedupe_key: "user-7" });
    expect(whileLeased).toEqual({ id: first!.id, state: "processing", deduplicated: true });
    await complete(leased.id, leased.lease_token);
    const [fresh] = await enqueue(queue, { dedupe_key: "user-7", payload: 3 });
    expect(fresh).toEqual({ id: expect.any(String), state: "pending", deduplicated: false });
    expect(fresh!.id).not.toBe(first!.id);
    expect(await getTask(fresh!.id)).toMatchObject({ dedupe_key: "user-7", payload: 3 });
  });

  it("treats re-enqueueing a client-supplied id as a no-op, in any letter case", async () => {
    const queue = uniqueQueue("ids");
    const id = "01HZX3N7Q2S8K4M6P9R1T5V7W0";
    expect(await enqueue(queue, { id, payload: { v: 1 } })).toEqual([{ id, state: "pending", deduplicated: false }]);
    expect(await enqueue(queue, { id: id.toLowerCase(), payload: { v: 2 } })).toEqual([
      { id, state: "pending", deduplicated: true },
    ]);
    expect(await enqueue(queue, { tasks: [{ id, payload: { v: 3 } }] })).toEqual([
      { id, state: "pending", deduplicated: true },
    ]);
    expect((await getTask(id)).payload).toEqual({ v: 1 });
    const listed = await call<{ tasks: Task[] }>("GET", `/v1/queues/${queue}/tasks`);
    expect(listed.body.tasks.map((t) => t.id)).toEqual([id]);
  });

  it("refuses to retry a dead task whose dedupe key a live task holds (409 dedupe_conflict); redrive skips it", async () => {
    const queue = uniqueQueue("dedupe");
    const dead = await deadTask(queue, { dedupe_key: "k" });
    const live = await enqueueOne(queue, { dedupe_key: "k" });
    expect(live).not.toBe(dead);
    expectError(await call("POST", `/v1/tasks/${dead}/retry`), 409, "dedupe_conflict", dead);
    const redrive = await call("POST", `/v1/queues/${queue}/redrive`, { body: {} });
    expect(redrive.body).toEqual({ redriven: 0, ids: [] });
    expect((await getTask(dead)).state).toBe("dead");
  });

  it("re-enqueueing the id of a finished task reports it and creates nothing", async () => {
    const queue = uniqueQueue("ids");
    const id = await enqueueOne(queue);
    const leased = await leaseOne(queue);
    expect((await complete(id, leased.lease_token)).body).toMatchObject({ state: "completed" });
    expect(await enqueue(queue, { id })).toEqual([{ id, state: "completed", deduplicated: true }]);
    expect(await lease(queue)).toEqual([]);
  });
});
