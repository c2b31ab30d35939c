import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { drainQueue } from "../../src/dispatch/drain";
import { d1TaskStore } from "../../src/engine/d1-store";
import { Effects } from "../../src/effects/follow";
import { PermanentError, RetryAfterError } from "../../src/processors/errors";
import { ProcessorRegistry } from "../../src/processors/registry";
import type { Processor } from "../../src/processors/types";
import { RateLimiter } from "../../src/dispatch/rate-limiter";
import { queueConfig, testProcessor } from "../dispatch/support";
import { openStream, type Stream } from "../events/socket";
import { row } from "../helpers";
import { call, enqueueOne, request } from "../http/api";
import { queueOn, shard } from "../shards/support";
import { effectsOf, overHttp, withRecordingEnv, type CausedEffects } from "./entry-points";

/**
 * Push dispatch is an entry point like the others: what its runs do reaches the one effects owner as the
 * same changes an external worker's HTTP calls report (src/dispatch/drain.ts, run-task.ts), so a push task's
 * lease, progress and settling wake and publish what the same life over HTTP does — a child of another
 * queue relayed home and its coordinator woken, progress published for the dashboard and `edgeq watch`.
 * One difference is by design: the drain runs its own queue's retries itself, so its coordinator is not
 * woken for them (an HTTP fail wakes it).
 */

const http = (method: string, path: string, body?: unknown) => request(method, path, { body });

/** Places a queue on its shard (its first use): a child is relayed to a queue that has a place. */
async function placed(queue: string): Promise<void> {
  expect((await call("PUT", `/v1/queues/${queue}/config`, { body: { max_attempts: 5 } })).status).toBe(200);
}

/** Listeners on `queues`: their hubs answer "listening", so no publisher skips their events meanwhile. */
async function listening(...queues: string[]): Promise<Stream[]> {
  return Promise.all(queues.map((q) => openStream(`/v1/queues/${q}/events`)));
}

/** One drain of `queue` (placed on DB) with `processor`, as its coordinator's alarm runs it, recorded. */
function pushRun(queue: string, processor: Processor) {
  return withRecordingEnv((env, defer) =>
    drainQueue({
      store: d1TaskStore(shard("DB")),
      db: shard("DB"),
      env,
      registry: new ProcessorRegistry([processor]),
      config: queueConfig(),
      now: Date.now,
      effects: new Effects(env, defer),
      queue,
      limiter: new RateLimiter(null),
    }),
  );
}

/** The same task life over HTTP, one recorded request per step: lease, then `steps` with its lease token. */
async function httpLife(queue: string, steps: Array<(id: string, token: string) => Request>) {
  const leased = await overHttp(http("POST", `/v1/queues/${queue}/lease`, { max: 1 }));
  const task = (leased.body as { tasks: Array<{ id: string; lease_token: string }> }).tasks[0]!;
  const calls = [...leased.calls];
  const bodies: unknown[] = [];
  for (const step of steps) {
    const done = await overHttp(step(task.id, task.lease_token));
    calls.push(...done.calls);
    bodies.push(done.body);
  }
  return { id: task.id, calls, bodies };
}

describe("push dispatch hands its changes to the one effects owner, as an HTTP worker's calls do", () => {
  it("lease, progress, completion with a child in another queue: the child relayed home and woken, all published", async () => {
    const expected: CausedEffects = {
      woken: ["COORDINATOR.notify child"],
      published: {
        queue: [
          ["leased", 0],
          ["progress", 0],
          ["completed", 0],
        ],
        child: [["enqueued", 1]],
      },
    };
    const then = (other: string) => [{ type: "next", queue: other, payload: {} }];

    const queue = queueOn("DB", "push-fx");
    const other = queueOn("DB_1", "push-fx-child");
    await placed(other);
    await enqueueOne(queue, { type: "step", then: then(other) });
    const overHttpLife = await httpLife(queue, [
      (id, token) => http("POST", `/v1/tasks/${id}/heartbeat`, { lease_token: token, progress: 50, message: "half" }),
      (id, token) => http("POST", `/v1/tasks/${id}/complete`, { lease_token: token }),
    ]);
    const httpChild = (overHttpLife.bodies[1] as { children: string[] }).children[0]!;
    const roles = { [queue]: "queue", [other]: "child" };
    expect(effectsOf(overHttpLife.calls, roles, [overHttpLife.id, httpChild])).toEqual(expected);

    const pushQueue = queueOn("DB", "push-fx");
    const pushOther = queueOn("DB_1", "push-fx-child");
    await placed(pushOther);
    const streams = await listening(pushQueue, pushOther);
    const parent = await enqueueOne(pushQueue, { type: "step", then: then(pushOther) });
    const step = testProcessor("step", async (_payload, ctx) => {
      await ctx.progress(50, "half");
      return { done: true };
    });
    const { calls, result } = await pushRun(pushQueue, step);
    const child = result.results[0]!.children[0]!.id;
    const pushRoles = { [pushQueue]: "queue", [pushOther]: "child" };
    expect(effectsOf(calls, pushRoles, [parent, child])).toEqual(expected);
    // Relayed to its queue's shard by the effects owner, not left on its parent's for the next tick.
    expect(await shard("DB_1").get(sql`SELECT id FROM tasks WHERE id = ${child}`)).toEqual({ id: child });
    expect(await row(child)).toMatchObject({ queue: pushOther, state: "pending" });
    // A listener hears the push run's progress, as the dashboard's live bar and `edgeq watch` do.
    // (An event shows its task as the hub reads it: by then completed, its progress 100, the message kept.)
    await streams[0]!.next((m) => m.event === "progress" && m.task_id === parent && m.message === "half");
    await streams[1]!.next((m) => m.event === "enqueued" && m.task_id === child);
    for (const stream of streams) stream.close();
  });

  it("a retry publishes `failed` as an HTTP fail does, without waking the drain's own coordinator; a permanent failure `dead`", async () => {
    const cases = [
      {
        failure: { error: "again", retry_after_s: 30 },
        processor: testProcessor("step", async () => {
          throw new RetryAfterError(30, "again");
        }),
        event: "failed",
      },
      {
        failure: { error: "never", retryable: false },
        processor: testProcessor("step", async () => {
          throw new PermanentError("never");
        }),
        event: "dead",
      },
    ];
    for (const { failure, processor, event } of cases) {
      const queue = queueOn("DB", "push-fail");
      await enqueueOne(queue, { type: "step" });
      const viaHttp = await httpLife(queue, [
        (id, token) => http("POST", `/v1/tasks/${id}/fail`, { ...failure, lease_token: token }),
      ]);
      const httpEffects = effectsOf(viaHttp.calls, { [queue]: "queue" }, [viaHttp.id]);
      expect(httpEffects.published).toEqual({
        queue: [
          ["leased", 0],
          [event, 0],
        ],
      });

      const pushQueue = queueOn("DB", "push-fail");
      const streams = await listening(pushQueue);
      const id = await enqueueOne(pushQueue, { type: "step" });
      const { calls } = await pushRun(pushQueue, processor);
      // The same events; the wake-up of a retry's queue is the drain's own (its next alarm), not a notify.
      expect(effectsOf(calls, { [pushQueue]: "queue" }, [id])).toEqual({
        woken: httpEffects.woken.filter((w) => w !== "COORDINATOR.notify queue"),
        published: httpEffects.published,
      });
      for (const stream of streams) stream.close();
    }
  });
});
