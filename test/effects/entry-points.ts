import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { expect } from "vitest";
import { SCHEDULER_OBJECT } from "../../src/protocols/durable-objects";
import type { EdgeqEntrypoint } from "../../src/rpc/edgeq-entrypoint";
import { EdgeqRpc } from "../../src/index";
import { valueOf } from "../../src/rpc/edgeq-rpc";
import type { RpcOutcome } from "../../src/rpc/rpc-outcome";
import type { Env } from "../../src/env";
import { call } from "../sqs/signed-request";
import { countingEnv, type ObjectCall } from "../support/counting-env";

/**
 * Runs one state change through an entry point — an HTTP or SQS request, an RPC call, a push drain — with
 * a recording env, and reduces what it caused to what the effects owner decided: which objects were woken
 * and which events each queue's hub was given.
 */

/** What a change caused, entry point aside. */
export interface CausedEffects {
  /** "BINDING.method role" per wake-up (a coordinator notified, the Scheduler armed), sorted. */
  woken: string[];
  /** Per queue (by role): its events in order, each as [kind, position of the task in `ids`]. */
  published: Record<string, Array<[string, number]>>;
}

/**
 * Reduces recorded calls to their effects. `roles` names the test's objects (a queue's name -> its role,
 * e.g. "queue", "child"); `ids` the tasks, named by position. How many publish calls carried the events
 * is left out: the publish batcher joins one isolate's events within 10 ms, so that grouping follows the
 * timing, not the entry point. A coordinator's own leases hand the hub their rows (`publishRows`, so it
 * reads nothing): the same events.
 *
 * @example
 * expect(effectsOf(calls, { [queue]: "queue" }, [id])).toEqual({ woken: ["COORDINATOR.notify queue"], published: { queue: [["enqueued", 0]] } });
 */
export function effectsOf(calls: ObjectCall[], roles: Record<string, string>, ids: string[]): CausedEffects {
  const role = (name: string | undefined) =>
    name === SCHEDULER_OBJECT ? "scheduler" : (roles[name ?? ""] ?? `unknown:${name}`);
  const woken: string[] = [];
  const published: CausedEffects["published"] = {};
  for (const c of calls) {
    // Reports of finished tasks to the waits for them are skipped while the coordinator answers that nobody
    // waits (src/effects/task-waiters.ts), so whether one is sent follows this isolate's earlier answers, not
    // the entry point; test/effects/task-waiters.test.ts checks which changes report which tasks.
    if (c.call === "COORDINATOR.tasksFinished") continue;
    if (c.events === undefined) {
      woken.push(`${c.call} ${role(c.name)}`);
      continue;
    }
    const list = (published[role(c.name)] ??= []);
    for (const group of c.events) for (const id of group.ids) list.push([group.kind, ids.indexOf(id)]);
  }
  return { woken: woken.sort(), published };
}

/** One request through the Worker's app (HTTP API or SQS endpoint) with a recording env: its calls and body. */
export async function overHttp(request: Request | Promise<Request>) {
  const counted = countingEnv();
  const res = await call(await request, counted.env as unknown as Record<string, unknown>);
  expect(res.status, JSON.stringify(res.body)).toBeLessThan(300);
  return { calls: counted.calls, body: res.body };
}

/** One call of the Workers RPC entrypoint (the class the Worker exports) with a recording env. */
export async function overRpc<T>(run: (rpc: EdgeqEntrypoint) => Promise<RpcOutcome<T>>) {
  const counted = countingEnv();
  const ctx = createExecutionContext();
  const body = valueOf(await run(new EdgeqRpc(ctx, counted.env)));
  await waitOnExecutionContext(ctx);
  return { calls: counted.calls, body };
}

/**
 * Work that reports to an effects owner of its own (push dispatch: `new Effects(env, defer)`, as a
 * coordinator builds it) with a recording env; waits for what it deferred.
 */
export async function withRecordingEnv<T>(run: (env: Env, defer: (work: Promise<unknown>) => void) => Promise<T>) {
  const counted = countingEnv();
  const deferred: Array<Promise<unknown>> = [];
  const result = await run(counted.env, (work) => deferred.push(work));
  // Following a change may defer nothing more, but a batched publish settles only once sent.
  await Promise.all(deferred);
  return { calls: counted.calls, result };
}
