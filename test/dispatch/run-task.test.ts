import { afterEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { MAX_TASK_RUN_MS, runTask } from "../../src/dispatch/run-task";
import { cancelTask } from "../../src/engine/cancel";
import { leaseTasks } from "../../src/engine/lease";
import { EdgeqError } from "../../src/contracts/errors";
import { MAX_PAYLOAD_BYTES } from "../../src/contracts/limits";
import { DEFAULT_QUEUE_CONFIG } from "../../src/engine/queue-config";
import { backoffBoundsMs } from "../../src/engine/retry-policy";
import { PermanentError, RetryAfterError } from "../../src/processors/errors";
import type { ProcessorContext } from "../../src/processors/types";
import { enqueueOne, leaseOne, VT_MS } from "../engine/fixtures";
import { T0, db, row, uniqueQueue } from "../helpers";
import { Clock, deferred, queueConfig, runDeps, testProcessor } from "./support";

/** Enqueues one task at T0 and leases it at T0 (attempt 1, lease until T0 + 30 s). */
async function leased(queue: string, task: Parameters<typeof enqueueOne>[1] = {}) {
  const id = await enqueueOne(queue, task, T0);
  const lease = await leaseOne(queue, T0);
  expect(lease.id).toBe(id);
  return lease;
}

afterEach(() => {
  vi.useRealTimers();
});

describe("runTask settles each outcome through the fenced engine calls", () => {
  it("completes with the processor's result and gives it the task's context", async () => {
    const queue = uniqueQueue("run");
    const seen: Partial<ProcessorContext>[] = [];
    const ok = testProcessor("ok", async (payload, ctx) => {
      seen.push({ taskId: ctx.taskId, queue: ctx.queue, type: ctx.type, group: ctx.group, attempt: ctx.attempt });
      return { got: payload, at: ctx.now() };
    });
    const task = await leased(queue, { type: "ok", payload: { n: 1 }, group: "g" });
    const clock = new Clock(T0 + 5);

    const result = await runTask(runDeps([ok], clock), task);

    expect(result).toEqual({
      id: task.id,
      outcome: "completed",
      children: [],
      // The settling write, reported to the effects owner as an HTTP ack's is.
      ack: { kind: "complete", outcome: expect.objectContaining({ id: task.id, ok: true, state: "completed" }) },
    });
    expect(seen).toEqual([{ taskId: task.id, queue, type: "ok", group: "g", attempt: 1 }]);
    expect(await row(task.id)).toMatchObject({
      state: "completed",
      result: JSON.stringify({ got: { n: 1 }, at: T0 + 5 }),
      finishedAt: T0 + 5,
      progress: 100,
    });
  });

  it("RetryAfterError: pending again exactly retryAfterS later, the failure in the error history", async () => {
    const queue = uniqueQueue("run");
    const quota = testProcessor("quota", async () => {
      throw new RetryAfterError(30, "quota exhausted");
    });
    const task = await leased(queue, { type: "quota" });
    const clock = new Clock(T0 + 7);

    const result = await runTask(runDeps([quota], clock), task);

    expect(result).toEqual({
      id: task.id,
      outcome: "retrying",
      children: [],
      runAt: T0 + 7 + 30_000,
      error: "quota exhausted",
      ack: { kind: "fail", outcome: expect.objectContaining({ ok: true, state: "pending", run_at: T0 + 7 + 30_000 }) },
    });
    const stored = await row(task.id);
    expect(stored).toMatchObject({ state: "pending", runAt: T0 + 7 + 30_000, leaseToken: null, finishedAt: null });
    expect(JSON.parse(stored.errors)).toEqual([{ attempt: 1, at: T0 + 7, message: "quota exhausted", kind: "error" }]);
  });

  it("PermanentError: dead at once although attempts are left", async () => {
    const queue = uniqueQueue("run");
    const permanent = testProcessor("permanent", async () => {
      throw new PermanentError("bad input: no text");
    });
    const task = await leased(queue, { type: "permanent", maxAttempts: 5 });
    const clock = new Clock(T0 + 3);

    const result = await runTask(runDeps([permanent], clock), task);

    expect(result).toMatchObject({ id: task.id, outcome: "dead", error: "bad input: no text" });
    const stored = await row(task.id);
    expect(stored).toMatchObject({ state: "dead", attempts: 1, maxAttempts: 5, finishedAt: T0 + 3 });
    expect(JSON.parse(stored.errors)).toEqual([
      { attempt: 1, at: T0 + 3, message: "bad input: no text", kind: "permanent" },
    ]);
  });

  it("a plain Error is a retryable failure recorded as `Error: boom`, retried after the queue's backoff", async () => {
    const queue = uniqueQueue("run");
    const boom = testProcessor("boom", async () => {
      throw new Error("boom");
    });
    const task = await leased(queue, { type: "boom" });
    const clock = new Clock(T0 + 2);

    const result = await runTask(runDeps([boom], clock), task);

    expect(result).toMatchObject({ id: task.id, outcome: "retrying", error: "Error: boom" });
    const stored = await row(task.id);
    expect(stored).toMatchObject({ state: "pending", attempts: 1, leaseToken: null });
    expect(result.runAt).toBe(stored.runAt);
    const bounds = backoffBoundsMs(1, DEFAULT_QUEUE_CONFIG.backoff_base_s, DEFAULT_QUEUE_CONFIG.backoff_cap_s);
    expect(stored.runAt - (T0 + 2)).toBeGreaterThanOrEqual(bounds.min);
    expect(stored.runAt - (T0 + 2)).toBeLessThanOrEqual(bounds.max);
    expect(JSON.parse(stored.errors)).toEqual([{ attempt: 1, at: T0 + 2, message: "Error: boom", kind: "error" }]);
  });

  it("a plain Error on the last attempt makes the task dead", async () => {
    const queue = uniqueQueue("run");
    const boom = testProcessor("boom", async () => {
      throw new Error("boom");
    });
    const task = await leased(queue, { type: "boom", maxAttempts: 1 });

    const result = await runTask(runDeps([boom], new Clock(T0 + 2)), task);

    expect(result).toMatchObject({ outcome: "dead", error: "Error: boom" });
    expect(await row(task.id)).toMatchObject({ state: "dead", finishedAt: T0 + 2 });
  });

  it("an invalid payload is dead at once, the message naming the field, and the processor never runs", async () => {
    const queue = uniqueQueue("run");
    let runs = 0;
    const strict = testProcessor(
      "strict",
      async () => {
        runs++;
        return null;
      },
      z.object({ text: z.string(), voice: z.string().optional() }),
    );
    const task = await leased(queue, { type: "strict", payload: { text: 5 }, maxAttempts: 5 });

    const result = await runTask(runDeps([strict], new Clock(T0 + 1)), task);

    expect(runs).toBe(0);
    expect(result).toMatchObject({ outcome: "dead" });
    expect(result.error).toMatch(/^invalid payload: text: /);
    const stored = await row(task.id);
    expect(stored).toMatchObject({ state: "dead", attempts: 1 });
    const [entry] = JSON.parse(stored.errors) as Array<{ message: string; kind: string }>;
    expect(entry).toMatchObject({ kind: "permanent", message: result.error });
  });

  it("a task type without a processor is dead at once", async () => {
    const queue = uniqueQueue("run");
    const other = testProcessor("other", async () => null);
    const task = await leased(queue, { type: "unheard-of", maxAttempts: 5 });

    const result = await runTask(runDeps([other], new Clock(T0 + 1)), task);

    expect(result).toMatchObject({ outcome: "dead", error: 'no processor registered for "unheard-of"' });
    const stored = await row(task.id);
    expect(stored.state).toBe("dead");
    expect(JSON.parse(stored.errors)).toEqual([
      { attempt: 1, at: T0 + 1, message: 'no processor registered for "unheard-of"', kind: "permanent" },
    ]);
  });

  it("the queue's `processor` setting overrides the task's type", async () => {
    const queue = uniqueQueue("run");
    const byType = testProcessor("by-type", async () => ({ by: "type" }));
    const byQueue = testProcessor("by-queue", async (_payload, ctx) => ({ by: "queue", type: ctx.type }));
    const task = await leased(queue, { type: "by-type" });

    const result = await runTask(
      runDeps([byType, byQueue], new Clock(T0 + 1), queueConfig({ processor: "by-queue" })),
      task,
    );

    expect(result.outcome).toBe("completed");
    expect(JSON.parse((await row(task.id)).result!)).toEqual({ by: "queue", type: "by-type" });
  });

  it("a queue `processor` that is not registered makes the task dead even if its type has one", async () => {
    const queue = uniqueQueue("run");
    const byType = testProcessor("by-type", async () => ({ by: "type" }));
    const task = await leased(queue, { type: "by-type" });

    const result = await runTask(runDeps([byType], new Clock(T0 + 1), queueConfig({ processor: "missing" })), task);

    expect(result).toMatchObject({ outcome: "dead", error: 'no processor registered for "missing"' });
    expect(await row(task.id)).toMatchObject({ state: "dead", result: null });
  });

  it("a result over the size limit fails the task with the reason instead of leaving it processing", async () => {
    const queue = uniqueQueue("run");
    const big = testProcessor("big", async () => "x".repeat(MAX_PAYLOAD_BYTES));
    const task = await leased(queue, { type: "big", maxAttempts: 5 });

    const result = await runTask(runDeps([big], new Clock(T0 + 1)), task);

    expect(result).toMatchObject({ id: task.id, outcome: "dead" });
    expect(result.error).toMatch(/result is \d+ bytes of JSON; the limit is 262144 bytes/);
    const stored = await row(task.id);
    expect(stored).toMatchObject({ state: "dead", result: null, leaseToken: null, finishedAt: T0 + 1 });
    expect(JSON.parse(stored.errors)).toEqual([{ attempt: 1, at: T0 + 1, message: result.error, kind: "permanent" }]);
  });
});

describe("runTask while the processor runs", () => {
  it("stores progress and a checkpoint on the task (fenced heartbeats), and a retry receives the checkpoint", async () => {
    const queue = uniqueQueue("run");
    const reported = deferred();
    const finish = deferred<"fail" | "succeed">();
    const checkpoints: unknown[] = [];
    const resumable = testProcessor("resumable", async (_payload, ctx) => {
      checkpoints.push(ctx.checkpoint);
      if (ctx.attempt === 1) {
        await ctx.progress(42.4, "page 3 of 7");
        await ctx.saveCheckpoint({ page: 3 });
        reported.resolve();
        if ((await finish.promise) === "fail") throw new Error("connection reset");
      }
      return { resumedFrom: ctx.checkpoint };
    });
    const task = await leased(queue, { type: "resumable" });
    const clock = new Clock(T0 + 1000);
    const deps = runDeps([resumable], clock);

    const running = runTask(deps, task);
    await reported.promise;
    // Mid-run, as any reader of D1 sees it: progress rounded, message, checkpoint, and the lease extended.
    expect(await row(task.id)).toMatchObject({
      state: "processing",
      progress: 42,
      progressMessage: "page 3 of 7",
      checkpoint: JSON.stringify({ page: 3 }),
      leaseToken: task.leaseToken,
      leaseExpiresAt: T0 + 1000 + VT_MS,
    });
    // The progress is reported to the effects owner (its event published), as an HTTP heartbeat's with
    // progress is; the checkpoint alone is not news.
    expect(deps.changes).toEqual([{ kind: "progress", queue, id: task.id }]);
    finish.resolve("fail");
    expect((await running).outcome).toBe("retrying");
    expect(await row(task.id)).toMatchObject({ state: "pending", checkpoint: JSON.stringify({ page: 3 }) });

    // The retry starts from the checkpoint the first attempt saved.
    const stored = await row(task.id);
    clock.t = stored.runAt;
    const retry = await leaseOne(queue, clock.t);
    expect(retry.attempts).toBe(2);
    const second = await runTask(deps, retry);
    expect(second.outcome).toBe("completed");
    expect(checkpoints).toEqual([null, { page: 3 }]);
    expect(JSON.parse((await row(task.id)).result!)).toEqual({ resumedFrom: { page: 3 } });
  });

  it("a cancel requested mid-run: the next progress call aborts ctx.signal, the task ends cancelled, the result is dropped", async () => {
    const queue = uniqueQueue("run");
    const entered = deferred();
    const go = deferred();
    const done = deferred<{ aborted: boolean; progressError: unknown }>();
    const polite = testProcessor("polite", async (_payload, ctx) => {
      entered.resolve();
      await go.promise;
      let progressError: unknown;
      await ctx.progress(50).catch((error: unknown) => {
        progressError = error;
      });
      done.resolve({ aborted: ctx.signal.aborted, progressError });
      return { shouldNot: "be stored" };
    });
    const task = await leased(queue, { type: "polite" });
    const clock = new Clock(T0 + 10);

    const running = runTask(runDeps([polite], clock), task);
    await entered.promise;
    await cancelTask(db(), task.id, T0 + 20);
    expect(await row(task.id)).toMatchObject({ state: "processing", cancelRequested: 1 });
    clock.t = T0 + 30;
    go.resolve();

    const result = await running;
    const seen = await done.promise;
    expect(result).toMatchObject({ id: task.id, outcome: "cancelled", children: [] });
    expect(seen.aborted).toBe(true);
    expect(seen.progressError).toBeInstanceOf(EdgeqError);
    expect((seen.progressError as EdgeqError).code).toBe("task_cancelled");
    expect(await row(task.id)).toMatchObject({
      state: "cancelled",
      result: null,
      finishedAt: T0 + 30,
      leaseToken: null,
    });
  });

  it("a processor that ignores its signal does not hold the task: runTask returns cancelled while it still runs", async () => {
    const queue = uniqueQueue("run");
    const entered = deferred();
    const go = deferred();
    const never = deferred<unknown>();
    let returned = false;
    const stubborn = testProcessor("stubborn", async (_payload, ctx) => {
      entered.resolve();
      await go.promise;
      ctx.progress(10).catch(() => {}); // it learns nothing from this and keeps going
      const value = await never.promise;
      returned = true;
      return value;
    });
    const task = await leased(queue, { type: "stubborn" });

    const running = runTask(runDeps([stubborn], new Clock(T0 + 10)), task);
    await entered.promise;
    await cancelTask(db(), task.id, T0 + 10);
    go.resolve();

    expect(await running).toMatchObject({ outcome: "cancelled" });
    expect(returned).toBe(false);
    expect(await row(task.id)).toMatchObject({ state: "cancelled", result: null });
    never.resolve({ late: true });
  });

  it("the periodic heartbeat notices a cancel of a processor that never calls progress", async () => {
    const queue = uniqueQueue("run");
    const entered = deferred();
    const never = deferred<unknown>();
    let signalAborted = false;
    const silent = testProcessor("silent", async (_payload, ctx) => {
      ctx.signal.addEventListener("abort", () => (signalAborted = true));
      entered.resolve();
      return never.promise;
    });
    const task = await leased(queue, { type: "silent" });
    const clock = new Clock(T0 + 10);
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });

    const running = runTask(runDeps([silent], clock), task);
    await entered.promise;
    // A heartbeat without a cancel extends the lease from the injected clock.
    clock.t = T0 + 5_000;
    await vi.advanceTimersByTimeAsync(VT_MS / 3);
    await expect.poll(async () => (await row(task.id)).leaseExpiresAt).toBe(T0 + 5_000 + VT_MS);
    expect(signalAborted).toBe(false);

    await cancelTask(db(), task.id, T0 + 6_000);
    clock.t = T0 + 7_000;
    await vi.advanceTimersByTimeAsync(VT_MS / 3);

    expect(await running).toMatchObject({ outcome: "cancelled" });
    expect(signalAborted).toBe(true);
    expect(await row(task.id)).toMatchObject({ state: "cancelled", finishedAt: T0 + 7_000 });
    never.resolve(null);
  });

  it("the periodic heartbeat keeps the lease's own length, not the queue's default", async () => {
    const queue = uniqueQueue("run");
    const entered = deferred();
    const finish = deferred<unknown>();
    const slow = testProcessor("slow", async () => {
      entered.resolve();
      return finish.promise;
    });
    await enqueueOne(queue, { type: "slow" }, T0);
    // Leased for 600 s while the queue's config says 30 s (DEFAULT_QUEUE_CONFIG).
    const [task] = await leaseTasks(db(), { queue, max: 1, visibilityTimeoutS: 600, holder: "push" }, T0);
    const clock = new Clock(T0 + 10);
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });

    const running = runTask(runDeps([slow], clock), task!);
    await entered.promise;
    // Paced at a third of 600 s: at 200 s the lease runs to now + 600 s (the queue's 30 s would give + 30 s).
    clock.t = T0 + 150_000;
    await vi.advanceTimersByTimeAsync(200_000);
    await expect.poll(async () => (await row(task!.id)).leaseExpiresAt).toBe(T0 + 150_000 + 600_000);
    finish.resolve("done");
    expect(await running).toMatchObject({ outcome: "completed" });
  });

  it("a cancel requested while a processor finishes without a heartbeat: the completion ends it cancelled", async () => {
    const queue = uniqueQueue("run");
    const entered = deferred();
    const go = deferred();
    const quick = testProcessor("quick", async () => {
      entered.resolve();
      await go.promise;
      return { shouldNot: "be stored" };
    });
    const task = await leased(queue, { type: "quick" });

    const running = runTask(runDeps([quick], new Clock(T0 + 10)), task);
    await entered.promise;
    await cancelTask(db(), task.id, T0 + 10);
    go.resolve();

    expect(await running).toMatchObject({ outcome: "cancelled" });
    expect(await row(task.id)).toMatchObject({ state: "cancelled", result: null });
  });

  it("a lease that lapsed while the processor ran is lease_lost: nothing is written", async () => {
    const queue = uniqueQueue("run");
    const go = deferred();
    const entered = deferred();
    const slow = testProcessor("slow", async () => {
      entered.resolve();
      await go.promise;
      return { late: true };
    });
    const task = await leased(queue, { type: "slow" });
    const clock = new Clock(T0 + 10);

    const running = runTask(runDeps([slow], clock), task);
    await entered.promise;
    clock.t = task.leaseExpiresAt!; // the lease is void from this instant
    go.resolve();

    expect(await running).toMatchObject({ id: task.id, outcome: "lease_lost" });
    expect(await row(task.id)).toMatchObject({ state: "processing", result: null, leaseToken: task.leaseToken });
  });

  it("a processor that runs past MAX_TASK_RUN_MS is aborted and fails retryably", async () => {
    const queue = uniqueQueue("run");
    const entered = deferred();
    const never = deferred<unknown>();
    const hung = testProcessor("hung", async () => {
      entered.resolve();
      return never.promise;
    });
    const task = await leased(queue, { type: "hung" });
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });

    const running = runTask(runDeps([hung], new Clock(T0 + 10)), task);
    await entered.promise;
    await vi.advanceTimersByTimeAsync(MAX_TASK_RUN_MS);

    const result = await running;
    expect(result).toMatchObject({ outcome: "retrying", error: `Error: timed out after ${MAX_TASK_RUN_MS / 1000} s` });
    expect(await row(task.id)).toMatchObject({ state: "pending", leaseToken: null });
    never.resolve(null);
  });
});
