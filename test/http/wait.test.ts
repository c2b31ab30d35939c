import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { EdgeqClient } from "../../src/client";
import { completeTasks } from "../../src/engine/complete";
import type { EdgeqService } from "../../src/rpc/edgeq-entrypoint";
import { edgeqRpc } from "../../src/rpc/edgeq-rpc";
import { taskDb, uniqueQueue } from "../helpers";
import { coordinator, setClock } from "../support/coordinator";
import { until } from "../support/until";
import {
  call,
  complete,
  deadTask,
  enqueueOne,
  expectError,
  leaseOne,
  MISSING_ID,
  ORIGIN,
  request,
  TOKEN,
  type Task,
} from "./api";

// GET /v1/tasks/{id}/wait: a long poll answered by the state change itself. The queue's coordinator holds the
// wait; the effects owner tells it when one of its tasks finishes. The coordinator's clock is moved an hour
// ahead in the tests that must show what answers a wait (`quietAhead`): then no skip an isolate was told is
// left to run out, so the coordinator reads the task only once, when the wait joins, and a report is the one
// thing that can answer it before its timeout.

interface WaitAnswer {
  finished: boolean;
  task: Task;
}

/** A wait as a client sends it, through the Worker's fetch (an abort signal reaches the Worker's request). */
function wait(id: string, query: string, signal?: AbortSignal) {
  return exports.default.fetch(new Request(request("GET", `/v1/tasks/${id}/wait?${query}`), { signal }));
}

async function answerOf(res: Promise<Response>): Promise<{ status: number; body: WaitAnswer; ms: number }> {
  const started = Date.now();
  const response = await res;
  return { status: response.status, body: (await response.json()) as WaitAnswer, ms: Date.now() - started };
}

/** Waits until the queue's coordinator holds `n` waits for tasks. */
function untilWaitsHeld(queue: string, n: number) {
  return until(`${n} wait(s) for tasks at ${queue}`, async () => (await coordinator(queue).waitingForTasks()) === n);
}

/** The coordinator's clock an hour ahead: every skip told to isolates has run out (see the file comment). */
function quietAhead(queue: string) {
  return setClock(queue, Date.now() + 3_600_000);
}

describe("waiting for a task's result", () => {
  it("answers a waiter when another request completes the task, long before its timeout", async () => {
    const queue = uniqueQueue("wait-done");
    const id = await enqueueOne(queue, { payload: { n: 1 } });
    const leased = await leaseOne(queue);
    await quietAhead(queue);
    const started = Date.now();
    const answer = answerOf(wait(id, "timeout_s=20"));
    await untilWaitsHeld(queue, 1);
    expect((await complete(id, leased.lease_token, { ok: true })).status).toBe(200);
    const { status, body } = await answer;
    expect(status).toBe(200);
    expect(body.finished).toBe(true);
    expect(body.task).toMatchObject({ id, state: "completed", result: { ok: true } });
    expect(Date.now() - started).toBeLessThan(10_000); // its timeout was 20 s: the completion answered it
    await untilWaitsHeld(queue, 0);
  });

  it("is not answered by a change nobody reported: the wait does not read D1 in a loop", async () => {
    const queue = uniqueQueue("wait-unreported");
    const id = await enqueueOne(queue);
    const leased = await leaseOne(queue);
    await quietAhead(queue);
    const answer = answerOf(wait(id, "timeout_s=0.6"));
    await untilWaitsHeld(queue, 1);
    // Completed in D1 directly, bypassing the effects owner: no report reaches the coordinator.
    await completeTasks(await taskDb(id), [{ id, leaseToken: leased.lease_token }], Date.now());
    const { body, ms } = await answer;
    // Only the timeout answered it (then the task is read once: it is finished).
    expect(ms).toBeGreaterThanOrEqual(550);
    expect(body).toMatchObject({ finished: true, task: { id, state: "completed" } });
  });

  it("answers cancels and failures that end a task, as completions", async () => {
    const queue = uniqueQueue("wait-ends");
    const cancelled = await enqueueOne(queue);
    const failing = await enqueueOne(queue, { max_attempts: 1 });
    await quietAhead(queue);
    const waits = [answerOf(wait(cancelled, "timeout_s=20")), answerOf(wait(failing, "timeout_s=20"))];
    await untilWaitsHeld(queue, 2);
    expect((await call("POST", `/v1/tasks/${cancelled}/cancel`)).status).toBe(200);
    const leased = await leaseOne(queue);
    expect(leased.id).toBe(failing);
    const failed = await call("POST", `/v1/tasks/${failing}/fail`, {
      body: { lease_token: leased.lease_token, error: "boom" },
    });
    expect(failed.body).toMatchObject({ state: "dead" });
    const [a, b] = await Promise.all(waits);
    expect(a!.body).toMatchObject({ finished: true, task: { id: cancelled, state: "cancelled" } });
    expect(b!.body).toMatchObject({ finished: true, task: { id: failing, state: "dead" } });
    expect(Math.max(a!.ms, b!.ms)).toBeLessThan(10_000);
  });

  it("answers the current view, not finished, when the wait runs out first", async () => {
    const queue = uniqueQueue("wait-timeout");
    const id = await enqueueOne(queue, { payload: { n: 2 } });
    const { status, body, ms } = await answerOf(wait(id, "timeout_s=0.3"));
    expect(status).toBe(200);
    expect(body).toMatchObject({ finished: false, task: { id, state: "pending", payload: { n: 2 } } });
    expect(ms).toBeGreaterThanOrEqual(250);
    await untilWaitsHeld(queue, 0);
  });

  it("answers a finished task at once, holding no wait", async () => {
    const queue = uniqueQueue("wait-finished");
    const id = await deadTask(queue);
    const { status, body, ms } = await answerOf(wait(id, "timeout_s=20"));
    expect(status).toBe(200);
    expect(body).toMatchObject({ finished: true, task: { id, state: "dead" } });
    expect(ms).toBeLessThan(5_000);
    expect(await coordinator(queue).waitingForTasks()).toBe(0);
  });

  it("404s an unknown task and 400s a bad timeout or id, naming the field", async () => {
    expectError(await call("GET", `/v1/tasks/${MISSING_ID}/wait?timeout_s=1`), 404, "not_found");
    const queue = uniqueQueue("wait-bad");
    const id = await enqueueOne(queue);
    for (const bad of ["21", "-1", "soon"]) {
      expectError(await call("GET", `/v1/tasks/${id}/wait?timeout_s=${bad}`), 400, "invalid_request", /timeout_s/);
    }
    expectError(await call("GET", `/v1/tasks/not-an-id/wait`), 400, "invalid_request", /id/);
    expect(await coordinator(queue).waitingForTasks()).toBe(0);
  });

  it("frees the wait when its client goes away", async () => {
    const queue = uniqueQueue("wait-abort");
    const id = await enqueueOne(queue);
    const client = new AbortController();
    const answer = wait(id, "timeout_s=20", client.signal).catch(() => null);
    await untilWaitsHeld(queue, 1);
    client.abort();
    await answer;
    // The Worker saw the hang-up and withdrew the wait from the coordinator: it holds nothing.
    await untilWaitsHeld(queue, 0);
  });

  it("is the same call on the RPC binding", async () => {
    const queue = uniqueQueue("wait-rpc");
    const rpc = edgeqRpc(exports.EdgeqRpc as unknown as EdgeqService);
    const { tasks } = await rpc.enqueue(queue, { payload: { n: 3 } });
    const id = tasks[0]!.id;
    const { tasks: leased } = await rpc.lease(queue, { max: 1 });
    await quietAhead(queue);
    const answer = rpc.wait(id, { timeout_s: 20 });
    await untilWaitsHeld(queue, 1);
    await rpc.complete(id, { lease_token: leased[0]!.lease_token, result: "done" });
    expect(await answer).toMatchObject({ finished: true, task: { id, state: "completed", result: "done" } });
    expect(await rpc.wait(id, { timeout_s: 0 })).toMatchObject({ finished: true });
  });

  it("edgeq/client: wait, and enqueueAndWait answered by the task's completion", async () => {
    const queue = uniqueQueue("wait-client");
    const client = new EdgeqClient({
      url: ORIGIN,
      token: TOKEN,
      fetch: (input, init) => exports.default.fetch(new Request(input, init)),
    });
    await quietAhead(queue);
    const waited = client.enqueueAndWait(queue, { payload: { n: 4 } }, { timeoutS: 60 });
    await untilWaitsHeld(queue, 1);
    const leased = await leaseOne(queue);
    expect((await complete(leased.id, leased.lease_token, { n: 4 })).status).toBe(200);
    expect(await waited).toMatchObject({
      finished: true,
      task: { id: leased.id, state: "completed", result: { n: 4 } },
    });
    expect(await client.wait(leased.id, { timeoutS: 0 })).toMatchObject({ finished: true });
    const pending = await enqueueOne(queue);
    expect(await client.wait(pending, { timeoutS: 0.05 })).toMatchObject({
      finished: false,
      task: { state: "pending" },
    });
  });
});
