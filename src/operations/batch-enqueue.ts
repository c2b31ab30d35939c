import type { z } from "zod";
import type { EnqueueBody } from "../contracts/api";
import { EdgeqError } from "../contracts/errors";
import { Effects } from "../effects/follow";
import type { Env } from "../env";
import { processingOf } from "../contracts/queue-processing";
import type { ProcessorRegistry } from "../processors/registry";
import { batchEnqueueOnQueue } from "../shards/batch-enqueue";
import { queueConfigOf } from "../shards/queue-config-ops";
import { queueRoute } from "../shards/queue-route";
import { parseArguments } from "./api/define";
import { fieldsOf, newTasksOf, queueApi } from "./api/queue-api";
import { unrunnable } from "./enqueue-checks";

/** What a batch enqueue takes: an enqueue's body, one task or `{ tasks: [...] }` (POST /v1/queues/{queue}/tasks). */
export type EnqueueInput = z.input<typeof EnqueueBody>;

/** An enqueue prepared for a D1 batch of the caller's own (`prepareEnqueue`). */
export interface PreparedEnqueue {
  /**
   * The enqueue's statements: put them in your `batch()` on the database you gave, with your own writes, in
   * this order (anywhere among yours). The batch commits all of them or none.
   */
  statements: D1PreparedStatement[];
  /**
   * The tasks' ids, in input order: each task has this id once the batch commits — except one whose
   * `dedupe_key` a live task of the queue held: that one is not created, and your batch commits anyway.
   */
  ids: string[];
  /**
   * Call once the batch has committed: wakes the queue's coordinator (a push queue runs the tasks at once, a
   * long poll waiting on it is answered) and publishes the tasks' `enqueued` events, as an enqueue over HTTP
   * does. Hand it to `ctx.waitUntil`, or await it. It never rejects (a failure is logged). Without it, the
   * next minute tick wakes the queue, and a pull worker finds the tasks at its next lease.
   */
  committed(): Promise<void>;
}

/**
 * Prepares an enqueue for a D1 batch of the caller's own, so that the caller's writes and the tasks commit
 * together or not at all (what a database queue is chosen for: no task for a row that rolled back, no row
 * without its task). `d1` is the D1 binding the batch runs on, and the queue must live there: every
 * partition of it on that database (the only database of a Worker without shards). The body is the API's
 * enqueue body, checked by its schemas with its messages; a push queue's tasks are checked against its
 * processors as an enqueue's are. Two differences, both from the batch being the caller's: an `id` of the
 * caller's own is refused (`tasks[i].id`: the batch cannot be refused for an id another queue holds, and it
 * commits whether the id was new or not; use `dedupe_key` for idempotence), and at most one statement's
 * worth of tasks go in (1,000 tasks and 1 MiB of JSON).
 *
 * @example
 * const enqueue = await prepareEnqueue({ env, processors }, env.DB, "receipts", { type: "receipt", payload: { order: 7 } });
 * await env.DB.batch([env.DB.prepare("INSERT INTO orders (id) VALUES (?)").bind(7), ...enqueue.statements]);
 * ctx.waitUntil(enqueue.committed());
 */
export async function prepareEnqueue(
  invocation: { env: Env; processors: ProcessorRegistry },
  d1: D1Database,
  queue: string,
  body: EnqueueInput,
  now: number = Date.now(),
): Promise<PreparedEnqueue> {
  const { env, processors } = invocation;
  const { params, input } = parseArguments(queueApi.enqueue, { queue }, body);
  const field = fieldsOf(input);
  const tasks = newTasksOf(input, now);
  const own = tasks.findIndex((task) => task.id !== undefined);
  if (own >= 0) {
    throw new EdgeqError(
      "invalid_request",
      `${field(own, "id")}: a task enqueued in your own batch gets its id from edgeq (the batch commits whether or not an id of yours was new); use dedupe_key to enqueue it once`,
    );
  }
  const route = await queueRoute(env, params.queue, now);
  const prepared = batchEnqueueOnQueue(route, d1, tasks, now, field);
  const problem = unrunnable(processors, params.queue, processingOf(await queueConfigOf(route)), tasks, field);
  if (problem !== null) throw new EdgeqError("invalid_request", problem);
  const { statements, ids, earliestRunAt, parts } = prepared;
  return {
    statements,
    ids,
    committed: async () => {
      const work: Array<Promise<unknown>> = [];
      new Effects(env, (p) => work.push(p)).after({ kind: "enqueued", queue: params.queue, ids, earliestRunAt, parts });
      await Promise.all(work);
    },
  };
}
