import { describe, expect, it } from "vitest";
import { z } from "zod";
import { inject } from "vitest";
import { EdgeqClient, EdgeqError, PermanentError, RetryAfterError, TaskStopped } from "../../src/node/index";
import { beatCountingClient, closedAfterEach, deferred, heldUntilStopped, nextEvent, sdkWorker } from "./sdk-support";
import { api, enqueue, getTask, uniqueQueue, waitFor } from "./worker-support";

/** The Node SDK's worker against a real `wrangler dev` (test/cli/server.ts): progress, the abort signal,
 * failure classes, typed payloads and a graceful stop. */

const track = closedAfterEach();

describe("Worker", () => {
  it("keeps every running task's lease with one extend call per beat, not one heartbeat per task", async () => {
    const queue = uniqueQueue("sdk-beats");
    const ids = await enqueue(
      queue,
      Array.from({ length: 4 }, (_, i) => ({ payload: { i } })),
    );
    const calls: string[] = [];
    const client = beatCountingClient(calls);
    const running = deferred();
    let started = 0;
    const finish = deferred();
    // A 3 s lease: a beat every second; the four tasks run for about two seconds.
    const worker = track(
      sdkWorker(
        queue,
        async () => {
          if (++started === ids.length) running.resolve();
          await finish.promise;
          return null;
        },
        // No worker session (Node 22 would open one): the beats without one are this test's subject.
        { client, concurrency: 4, visibilityS: 3, session: false },
      ),
    );
    const run = worker.run();
    await running.promise;
    await new Promise((resolve) => setTimeout(resolve, 2_300));
    finish.resolve();
    await worker.close();
    await run;
    expect(calls.length).toBeGreaterThanOrEqual(1);
    // One call per beat for the four tasks: never a per-task heartbeat.
    expect(calls.every((p) => p.endsWith(`/v1/queues/${queue}/extend`))).toBe(true);
    expect(calls.length).toBeLessThanOrEqual(3);
    for (const id of ids) expect(await getTask(id)).toMatchObject({ state: "completed" });
  });

  it("runs a task to its result, recording progress on the way", async () => {
    const queue = uniqueQueue("sdk-progress");
    const [id] = await enqueue(queue, [{ type: "render", payload: { n: 2 } }]);
    const reported = deferred();
    const finish = deferred();
    const worker = track(
      sdkWorker<{ n: number }>(queue, async (task, ctx) => {
        await ctx.progress(50, "half way");
        await ctx.checkpoint({ step: 1 });
        reported.resolve();
        await finish.promise;
        return { doubled: task.payload.n * 2 };
      }),
    );
    const completed = nextEvent<[{ id: string }, unknown]>(worker, "completed");
    const running = worker.run();
    await reported.promise;
    expect(await getTask(id!)).toMatchObject({
      state: "processing",
      progress: 50,
      progress_message: "half way",
      checkpoint: { step: 1 },
    });
    finish.resolve();
    const [task, result] = await completed;
    expect(task.id).toBe(id);
    expect(result).toEqual({ doubled: 4 });
    expect(await getTask(id!)).toMatchObject({ state: "completed", result: { doubled: 4 }, attempts: 1 });
    await worker.close();
    await running;
  });

  it("aborts ctx.signal when the task is cancelled, and acks nothing", async () => {
    const queue = uniqueQueue("sdk-cancel");
    const [id] = await enqueue(queue, [{ type: "t" }]);
    const held = heldUntilStopped();
    // A 3 s lease: the heartbeat that learns of the cancel comes within a second (a worker session's `check`
    // at once, on Node 22).
    const worker = track(sdkWorker(queue, held.handler, { visibilityS: 3 }));
    const cancelled = nextEvent<[{ id: string }]>(worker, "cancelled");
    void worker.run();
    await held.leased;
    await api("POST", `/v1/tasks/${id}/cancel`);
    const [task] = await cancelled;
    expect(task.id).toBe(id);
    expect(held.reason()).toBeInstanceOf(TaskStopped);
    expect((held.reason() as TaskStopped).reason).toBe("cancelled");
    expect(await getTask(id!)).toMatchObject({ state: "cancelled" });
  });

  it("fails for good on PermanentError, for a retry otherwise, not before a RetryAfterError's delay", async () => {
    const queue = uniqueQueue("sdk-fail");
    await api("PUT", `/v1/queues/${queue}/config`, { max_attempts: 5 });
    const [bad, flaky, later] = await enqueue(queue, [{ type: "bad" }, { type: "flaky" }, { type: "later" }]);
    const worker = track(
      sdkWorker(queue, async (task) => {
        if (task.type === "bad") throw new PermanentError("the input will never work");
        if (task.type === "later") throw new RetryAfterError(600, "quota: come back in 10 minutes");
        throw new Error("flaky network");
      }),
    );
    const failures = new Map<string, { retryable: boolean; dead: boolean }>();
    worker.on("failed", (task, _error, info) => failures.set(task.id, info));
    void worker.run();
    await waitFor("three failures", () => failures.size >= 3);
    expect(failures.get(bad!)).toMatchObject({ retryable: false, dead: true });
    expect(failures.get(flaky!)).toMatchObject({ retryable: true, dead: false });
    const [b, f, l] = await Promise.all([getTask(bad!), getTask(flaky!), getTask(later!)]);
    expect(b).toMatchObject({ state: "dead", attempts: 1 });
    expect(b.errors[0]?.message).toBe("the input will never work");
    expect(f.errors[0]?.message).toBe("flaky network");
    expect(l.state).toBe("pending");
    // retry_after_s 600: not due for ~10 minutes (allow the test's own run time below that).
    expect(Date.parse(l.run_at) - Date.now()).toBeGreaterThan(500_000);
  });

  it("checks payloads with the schema: a mismatch fails for good naming the field", async () => {
    const queue = uniqueQueue("sdk-schema");
    const [good, bad] = await enqueue(queue, [
      { type: "resize", payload: { width: 640 } },
      { type: "resize", payload: { width: "wide" } },
    ]);
    const seen: number[] = [];
    const worker = track(
      sdkWorker(
        queue,
        async (task) => {
          seen.push(task.payload.width);
          return { area: task.payload.width * 2 };
        },
        { schema: z.object({ width: z.number().int() }) },
      ),
    );
    void worker.run();
    const [g, b] = await waitFor("both tasks to finish", async () => {
      const tasks = await Promise.all([getTask(good!), getTask(bad!)]);
      return tasks.every((t) => t.state === "completed" || t.state === "dead") && tasks;
    });
    expect(g).toMatchObject({ state: "completed", result: { area: 1280 } });
    expect(b).toMatchObject({ state: "dead", attempts: 1 });
    expect(b.errors[0]?.message).toMatch(/^width: /);
    expect(seen).toEqual([640]);
  });

  it("on close hands running tasks back after the grace period and ends its long poll", async () => {
    const queue = uniqueQueue("sdk-close");
    const [quick, slow] = await enqueue(queue, [{ type: "quick" }, { type: "slow" }]);
    const bothRunning = deferred();
    const letQuickFinish = deferred();
    let runningCount = 0;
    const worker = track(
      sdkWorker(
        queue,
        async (task, ctx) => {
          if (++runningCount === 2) bothRunning.resolve();
          if (task.type === "quick") {
            await letQuickFinish.promise;
            return "done";
          }
          // Never finishes on its own: only the hand-back ends it.
          await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve, { once: true }));
          throw ctx.signal.reason;
        },
        { concurrency: 2, graceS: 1 },
      ),
    );
    const released = nextEvent<[{ id: string }]>(worker, "released");
    const stopped = nextEvent(worker, "stopped");
    const running = worker.run();
    await bothRunning.promise;
    const closing = worker.close();
    // Within the grace period a task may still finish and be completed.
    letQuickFinish.resolve();
    const [handed] = await released;
    expect(handed.id).toBe(slow);
    await closing;
    await running;
    await stopped;
    expect(await getTask(quick!)).toMatchObject({ state: "completed", result: "done" });
    // Handed back: pending at once, the attempt not counted.
    expect(await getTask(slow!)).toMatchObject({ state: "pending", attempts: 0, lease_expires_at: null });
  });

  it("stops at once when idle, ending its long poll", async () => {
    const queue = uniqueQueue("sdk-idle");
    const polling = deferred();
    const watching: typeof fetch = (input, init) => {
      const body = typeof init?.body === "string" ? (JSON.parse(init.body) as { wait_s?: number }) : {};
      if (String(input).endsWith("/lease") && (body.wait_s ?? 0) > 0) polling.resolve();
      return fetch(input, init);
    };
    const client = new EdgeqClient({ url: inject("edgeqUrl"), token: inject("edgeqToken"), fetch: watching });
    const worker = track(sdkWorker(queue, async () => "never", { client }));
    const running = worker.run();
    await polling.promise;
    const before = Date.now();
    await worker.close();
    await running;
    // The 20 s long poll was ended, not waited out.
    expect(Date.now() - before).toBeLessThan(5_000);
  });

  it("repeats an ack whose answer was lost: the server applied it once, the worker reports it once", async () => {
    const queue = uniqueQueue("sdk-repeat");
    const [id] = await enqueue(queue, [{ type: "t" }]);
    let lost = 0;
    // The first ack reaches the server, which applies it; its answer is then lost on the way back.
    const losingFetch: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      if (String(input).endsWith("/ack") && lost++ === 0) throw new TypeError("fetch failed");
      return response;
    };
    const client = new EdgeqClient({ url: inject("edgeqUrl"), token: inject("edgeqToken"), fetch: losingFetch });
    const worker = track(sdkWorker(queue, async () => ({ ok: 1 }), { client }));
    const completions: string[] = [];
    const errors: Error[] = [];
    worker.on("completed", (task) => completions.push(task.id));
    worker.on("error", (error) => errors.push(error));
    worker.on("lease_lost", (task) => errors.push(new Error(`lease lost: ${task.id}`)));
    void worker.run();
    await waitFor("the completion", () => completions.length > 0);
    expect(lost).toBeGreaterThanOrEqual(2);
    expect(completions).toEqual([id]);
    expect(errors).toEqual([]);
    expect(await getTask(id!)).toMatchObject({ state: "completed", result: { ok: 1 }, attempts: 1 });
  });

  // Issue 29: the event was a plain Error whose code was only in its text ("ack_failed" for any failure).
  it("emits an outcome it could not record as an EdgeqError with the refusal's code and status", async () => {
    const queue = uniqueQueue("sdk-unrecorded");
    const [id] = await enqueue(queue, [{ type: "t" }]);
    const refusing: typeof fetch = async (input, init) => {
      if (!String(input).endsWith("/ack")) return fetch(input, init);
      const error = { code: "invalid_request", message: "refused by the test" };
      return Response.json({ error }, { status: 400 });
    };
    const client = new EdgeqClient({ url: inject("edgeqUrl"), token: inject("edgeqToken"), fetch: refusing });
    const worker = track(sdkWorker(queue, async () => ({ ok: 1 }), { client }));
    const [error] = await new Promise<[unknown]>((resolve) => {
      worker.once("error", (e) => resolve([e]));
      void worker.run();
    });
    expect(error).toBeInstanceOf(EdgeqError);
    expect(error).toMatchObject({
      code: "invalid_request",
      status: 400,
      transient: false,
      message: `${id}: the outcome was not recorded (invalid_request): refused by the test`,
    });
  });

  it("sends the acks of finished tasks with the next lease when every slot was busy", async () => {
    const queue = uniqueQueue("sdk-carry");
    const ids = await enqueue(queue, [{ type: "a" }, { type: "b" }, { type: "c" }, { type: "d" }]);
    const ackBodies: Array<{ lease?: unknown }> = [];
    const recording: typeof fetch = async (input, init) => {
      if (String(input).endsWith("/ack")) ackBodies.push(JSON.parse(String(init?.body)) as { lease?: unknown });
      return fetch(input, init);
    };
    const client = new EdgeqClient({ url: inject("edgeqUrl"), token: inject("edgeqToken"), fetch: recording });
    const worker = track(sdkWorker(queue, async (task) => task.type, { client, concurrency: 1 }));
    const completions: string[] = [];
    worker.on("completed", (task) => completions.push(task.id));
    void worker.run();
    await waitFor("four completions", () => completions.length === 4);
    expect(completions.sort()).toEqual([...ids].sort());
    // One slot: each finish frees it while the worker waits for it, so the ack carries the next lease.
    expect(ackBodies.filter((b) => b.lease !== undefined).length).toBeGreaterThanOrEqual(3);
  });

  it("aborts ctx.signal past the time limit and fails the task for a retry, saying so", async () => {
    const queue = uniqueQueue("sdk-timeout");
    const [id] = await enqueue(queue, [{ type: "t" }]);
    let reason: unknown;
    const worker = track(
      sdkWorker(
        queue,
        async (_task, ctx) => {
          await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve, { once: true }));
          reason = ctx.signal.reason;
          throw new Error("stopped half way");
        },
        { timeoutS: 1 },
      ),
    );
    const failed = nextEvent<[{ id: string }, string, { retryable: boolean }]>(worker, "failed");
    void worker.run();
    const [task, error, info] = await failed;
    expect(task.id).toBe(id);
    expect((reason as TaskStopped).reason).toBe("timeout");
    expect(error).toBe("timed out after 1s (timeoutS); stopped half way");
    expect(info.retryable).toBe(true);
    expect((await getTask(id!)).errors[0]?.message).toBe(error);
  });

  it("aborts ctx.signal when the lease is lost, and reports it without acking", async () => {
    const queue = uniqueQueue("sdk-lost");
    const [id] = await enqueue(queue, [{ type: "t" }]);
    const token = deferred<string>();
    let reason: unknown;
    const worker = track(
      sdkWorker(
        queue,
        async (task, ctx) => {
          token.resolve(task.lease_token);
          await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve, { once: true }));
          reason = ctx.signal.reason;
          return "too late";
        },
        // A 3 s lease: a heartbeat every second finds the lease gone. Without a worker session: a session's
        // worker hears of a lease lost this way (its token used by someone else) only at its ack.
        { visibilityS: 3, session: false },
      ),
    );
    const lost = nextEvent<[{ id: string }]>(worker, "lease_lost");
    void worker.run();
    // Someone else completes the task with the token: the worker's lease is over.
    await api("POST", `/v1/tasks/${id}/complete`, { lease_token: await token.promise, result: "elsewhere" });
    const [task] = await lost;
    expect(task.id).toBe(id);
    expect((reason as TaskStopped).reason).toBe("lease_lost");
    expect(await getTask(id!)).toMatchObject({ state: "completed", result: "elsewhere" });
  });
});
