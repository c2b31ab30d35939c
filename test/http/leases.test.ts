import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { snapshot, uniqueQueue } from "../helpers";
import {
  call,
  complete,
  enqueueOne,
  expectError,
  expireLease,
  fail,
  getTask,
  ISO,
  lease,
  leaseOne,
  MISSING_ID,
  type AckResults,
  type Task,
} from "./api";

interface HeartbeatView {
  id: string;
  lease_expires_at: string;
  progress: number | null;
  progress_message: string | null;
}

const heartbeat = (id: string, body: Record<string, unknown>) =>
  call<HeartbeatView>("POST", `/v1/tasks/${id}/heartbeat`, { body });

describe("lease fencing", () => {
  it("rejects a wrong token with 409 lease_lost and leaves the task unchanged", async () => {
    const queue = uniqueQueue("fence");
    const id = await enqueueOne(queue);
    const leased = await leaseOne(queue);
    const before = await snapshot(queue);
    const wrong = "0".repeat(32);
    expectError(await complete(id, wrong, "stolen"), 409, "lease_lost", id);
    expectError(await fail(id, { lease_token: wrong, error: "x" }), 409, "lease_lost", id);
    expectError(await heartbeat(id, { lease_token: wrong, progress: 99 }), 409, "lease_lost", id);
    expect(await snapshot(queue)).toEqual(before);
    expect((await complete(id, leased.lease_token, "mine")).status).toBe(200);
  });

  it("rejects a token superseded by a later lease of the same task", async () => {
    const queue = uniqueQueue("fence");
    const id = await enqueueOne(queue);
    const first = await leaseOne(queue);
    await fail(id, { lease_token: first.lease_token, error: "boom", retry_after_s: 0 });
    const second = await leaseOne(queue);
    const before = await snapshot(queue);
    expectError(await complete(id, first.lease_token), 409, "lease_lost");
    expectError(await heartbeat(id, { lease_token: first.lease_token }), 409, "lease_lost");
    expect(await snapshot(queue)).toEqual(before);
    expect((await complete(id, second.lease_token, 2)).body).toMatchObject({ state: "completed" });
    // The same complete again (its answer lost): a repeat, told so; the first result stays.
    expect((await complete(id, second.lease_token, 3)).body).toMatchObject({ state: "completed", repeated: true });
    expect((await getTask(id)).result).toBe(2);
  });

  it("voids an expired lease before the reaper sees it: complete, fail and heartbeat get 409 lease_lost", async () => {
    const queue = uniqueQueue("fence");
    const id = await enqueueOne(queue);
    const leased = await leaseOne(queue);
    await expireLease(id);
    const before = await snapshot(queue);
    expectError(await complete(id, leased.lease_token, "late"), 409, "lease_lost", /expired/);
    expectError(await fail(id, { lease_token: leased.lease_token, error: "late" }), 409, "lease_lost");
    expectError(await heartbeat(id, { lease_token: leased.lease_token, extend_s: 60 }), 409, "lease_lost");
    expect(await snapshot(queue)).toEqual(before);
    expect(await getTask(id)).toMatchObject({ state: "processing", result: null, errors: [] });
  });

  it("honours a per-lease visibility timeout", async () => {
    const queue = uniqueQueue("fence");
    await enqueueOne(queue);
    const t0 = Date.now();
    const leased = await leaseOne(queue, { visibility_timeout_s: 600 });
    const expires = Date.parse(leased.lease_expires_at!);
    expect(expires).toBeGreaterThanOrEqual(t0 + 600_000);
    expect(expires).toBeLessThanOrEqual(Date.now() + 600_000);
  });
});

describe("heartbeat", () => {
  it("extends the lease and records progress, readable through GET", async () => {
    const queue = uniqueQueue("hb");
    const id = await enqueueOne(queue);
    const leased = await leaseOne(queue);
    const t0 = Date.now();
    const res = await heartbeat(id, {
      lease_token: leased.lease_token,
      extend_s: 900,
      progress: 40,
      message: "2 of 5",
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id, progress: 40, progress_message: "2 of 5" });
    expect(res.body.lease_expires_at).toMatch(ISO);
    expect(Date.parse(res.body.lease_expires_at)).toBeGreaterThanOrEqual(t0 + 900_000);
    expect(await getTask(id)).toMatchObject({
      progress: 40,
      progress_message: "2 of 5",
      lease_expires_at: res.body.lease_expires_at,
    });

    // Without progress the stored progress is kept; without extend_s the lease's own length applies (here
    // the queue's 30 s default, which the lease named no length and so took), not a later config change.
    await call("PUT", `/v1/queues/${queue}/config`, { body: { visibility_timeout_s: 120 } });
    const t1 = Date.now();
    const again = await heartbeat(id, { lease_token: leased.lease_token });
    expect(again.body).toMatchObject({ progress: 40, progress_message: "2 of 5" });
    expect(Date.parse(again.body.lease_expires_at)).toBeGreaterThanOrEqual(t1 + 30_000);
    expect(Date.parse(again.body.lease_expires_at)).toBeLessThanOrEqual(Date.now() + 30_000);
    expect((await complete(id, leased.lease_token)).status).toBe(200);
  });

  it("without extend_s keeps the lease's own visibility timeout: a 600 s lease is not cut to the queue's 30 s", async () => {
    const queue = uniqueQueue("hb");
    const id = await enqueueOne(queue);
    const leased = await leaseOne(queue, { visibility_timeout_s: 600 });
    const t0 = Date.now();
    const res = await heartbeat(id, { lease_token: leased.lease_token, progress: 10 });
    expect(res.status, res.text).toBe(200);
    expect(Date.parse(res.body.lease_expires_at)).toBeGreaterThanOrEqual(t0 + 600_000);
    expect(Date.parse(res.body.lease_expires_at)).toBeLessThanOrEqual(Date.now() + 600_000);
  });
});

describe("extend", () => {
  it("without visibility_timeout_s extends each lease by its own length; the body's or an item's wins when given", async () => {
    const queue = uniqueQueue("extend");
    const [long, short, named] = [
      await enqueueOne(queue, { priority: 3 }),
      await enqueueOne(queue, { priority: 2 }),
      await enqueueOne(queue, { priority: 1 }),
    ];
    const tokens = [
      (await leaseOne(queue, { visibility_timeout_s: 600 })).lease_token,
      (await leaseOne(queue, { visibility_timeout_s: 60 })).lease_token,
      (await leaseOne(queue, { visibility_timeout_s: 600 })).lease_token,
    ];
    const extend = (body: Record<string, unknown>) =>
      call<{ results: Array<{ id: string; ok: boolean; lease_expires_at: string }> }>(
        "POST",
        `/v1/queues/${queue}/extend`,
        { body },
      );
    const t0 = Date.now();
    const res = await extend({
      leases: [
        { id: long, lease_token: tokens[0] },
        { id: short, lease_token: tokens[1] },
        { id: named, lease_token: tokens[2], visibility_timeout_s: 5 },
      ],
    });
    expect(res.status, res.text).toBe(200);
    const t1 = Date.now();
    const lengths = res.body.results.map((r) => Date.parse(r.lease_expires_at));
    for (const [k, s] of [600, 60, 5].entries()) {
      expect(lengths[k]).toBeGreaterThanOrEqual(t0 + s * 1000);
      expect(lengths[k]).toBeLessThanOrEqual(t1 + s * 1000);
    }
    const body = await extend({ leases: [{ id: long, lease_token: tokens[0] }], visibility_timeout_s: 20 });
    expect(Date.parse(body.body.results[0]!.lease_expires_at)).toBeLessThanOrEqual(Date.now() + 20_000);
  });
});

describe("cancel", () => {
  it("cancels a pending task at once; a second cancel is 409 invalid_transition", async () => {
    const queue = uniqueQueue("cancel");
    const id = await enqueueOne(queue);
    const res = await call<Task>("POST", `/v1/tasks/${id}/cancel`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id, state: "cancelled", cancel_requested: false });
    expect(res.body.finished_at).toMatch(ISO);
    expect(await lease(queue)).toEqual([]);
    expectError(await call("POST", `/v1/tasks/${id}/cancel`), 409, "invalid_transition", /cancelled/);
  });

  it("refuses to cancel a finished task (409 invalid_transition) and leaves it as it was", async () => {
    const queue = uniqueQueue("cancel");
    const id = await enqueueOne(queue);
    await complete(id, (await leaseOne(queue)).lease_token, "done");
    const before = await snapshot(queue);
    expectError(await call("POST", `/v1/tasks/${id}/cancel`), 409, "invalid_transition", /completed/);
    expect(await snapshot(queue)).toEqual(before);
  });

  it("asks the holder of a processing task to stop: its heartbeat gets 409 task_cancelled and the task ends cancelled", async () => {
    const queue = uniqueQueue("cancel");
    const id = await enqueueOne(queue);
    const leased = await leaseOne(queue);
    const res = await call<Task>("POST", `/v1/tasks/${id}/cancel`);
    expect(res.body).toMatchObject({ id, state: "processing", cancel_requested: true, finished_at: null });
    expectError(await call("POST", `/v1/tasks/${id}/cancel`), 409, "invalid_transition", /already requested/);

    expectError(await heartbeat(id, { lease_token: leased.lease_token, progress: 10 }), 409, "task_cancelled");
    const task = await getTask(id);
    expect(task).toMatchObject({ state: "cancelled", lease_expires_at: null });
    expect(task.finished_at).toMatch(ISO);
    expectError(await complete(id, leased.lease_token), 409, "lease_lost");
    expect((await getTask(id)).state).toBe("cancelled");
  });

  it("turns a complete or fail after a cancel request into cancelled (409 task_cancelled), discarding the result", async () => {
    const queue = uniqueQueue("cancel");
    const [completed, failed] = [await enqueueOne(queue, { priority: 1 }), await enqueueOne(queue)];
    const [a, b] = await lease(queue, { max: 2 });
    await call("POST", `/v1/queues/${queue}/cancel`, { body: { all: true } });
    expectError(await complete(completed, a!.lease_token, { done: true }), 409, "task_cancelled");
    expectError(
      await fail(failed, { lease_token: b!.lease_token, error: "x", retry_after_s: 0 }),
      409,
      "task_cancelled",
    );
    expect(await getTask(completed)).toMatchObject({ state: "cancelled", result: null });
    expect(await getTask(failed)).toMatchObject({ state: "cancelled", lease_expires_at: null });
    expect(await lease(queue)).toEqual([]);
  });

  it("cancels a queue's live tasks, optionally of one group, and leaves finished ones alone", async () => {
    const queue = uniqueQueue("cancel");
    const done = await enqueueOne(queue, { group: "a", priority: 9 });
    const doneLease = await leaseOne(queue);
    await complete(done, doneLease.lease_token);
    const running = await enqueueOne(queue, { group: "a", priority: 5 });
    await leaseOne(queue);
    const waitingA = await enqueueOne(queue, { group: "a" });
    const waitingB = await enqueueOne(queue, { group: "b" });

    const a = await call("POST", `/v1/queues/${queue}/cancel`, { body: { group: "a" } });
    expect([a.status, a.body]).toEqual([200, { cancelled: 1, cancel_requested: 1 }]);
    expect((await getTask(waitingA)).state).toBe("cancelled");
    expect(await getTask(running)).toMatchObject({ state: "processing", cancel_requested: true });
    expect((await getTask(done)).state).toBe("completed");
    expect((await getTask(waitingB)).state).toBe("pending");

    const all = await call("POST", `/v1/queues/${queue}/cancel`, { body: { all: true } });
    expect(all.body).toEqual({ cancelled: 1, cancel_requested: 0 });
    expect((await getTask(waitingB)).state).toBe("cancelled");
  });
});

describe("batch ack", () => {
  it("applies each item on its own and reports every outcome in order", async () => {
    const queue = uniqueQueue("ack");
    for (let i = 0; i < 4; i++) await enqueueOne(queue, { payload: i, max_attempts: 2 });
    const [a, b, c, d] = await lease(queue, { max: 4 });
    const res = await call<AckResults>("POST", `/v1/queues/${queue}/ack`, {
      body: {
        complete: [
          { id: a!.id, lease_token: a!.lease_token, result: { n: 0 } },
          { id: b!.id, lease_token: "stale" },
        ],
        fail: [
          { id: c!.id, lease_token: c!.lease_token, error: "try later", retry_after_s: 0 },
          { id: d!.id, lease_token: d!.lease_token, error: "bad input", retryable: false },
          { id: MISSING_ID, lease_token: "t", error: "x" },
        ],
      },
    });
    expect(res.status).toBe(200);
    expect(res.body.results).toEqual([
      { id: a!.id, ok: true, state: "completed", children: [], repeated: false },
      { id: b!.id, ok: false, error: { code: "lease_lost", message: expect.stringContaining(b!.id) } },
      { id: c!.id, ok: true, state: "pending", children: [], repeated: false },
      { id: d!.id, ok: true, state: "dead", children: [], repeated: false },
      { id: MISSING_ID, ok: false, error: { code: "not_found", message: expect.stringContaining(MISSING_ID) } },
    ]);
    expect(await getTask(a!.id)).toMatchObject({ state: "completed", result: { n: 0 } });
    expect(await getTask(b!.id)).toMatchObject({ state: "processing", result: null });
    expect(await getTask(c!.id)).toMatchObject({ state: "pending", errors: [{ message: "try later", kind: "error" }] });
    expect(await getTask(d!.id)).toMatchObject({
      state: "dead",
      errors: [{ message: "bad input", kind: "permanent" }],
    });
    expect((await leaseOne(queue)).id).toBe(c!.id);
  });
});

describe("long-poll lease (through the queue's coordinator)", () => {
  it("returns due work at once", async () => {
    const queue = uniqueQueue("poll");
    const id = await enqueueOne(queue);
    const started = Date.now();
    const tasks = await lease(queue, { wait_s: 10 });
    expect(tasks.map((t) => t.id)).toEqual([id]);
    expect(tasks[0]!.lease_token).toMatch(/^[0-9a-f]{32}(?:[0-9A-Z]{2})?$/);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("is answered by an enqueue that arrives while it waits", async () => {
    const queue = uniqueQueue("poll");
    const started = Date.now();
    const waiting = lease(queue, { wait_s: 10 });
    // Enqueue only once the request is parked in the coordinator, so only the enqueue's wake-up can answer it.
    const coordinator = env.COORDINATOR.get(env.COORDINATOR.idFromName(queue));
    for (let i = 0; (await coordinator.waiting()) === 0; i++) {
      expect(i, "the lease never reached the coordinator").toBeLessThan(1000);
      await scheduler.wait(5);
    }
    const id = await enqueueOne(queue, { payload: "late" });
    const tasks = await waiting;
    expect(tasks.map((t) => t.id)).toEqual([id]);
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});
