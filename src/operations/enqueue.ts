import { enqueuedChange } from "../effects/changes";
import type { EnqueueResult, FanOutResult, NewTask, TaskField } from "../engine/store";
import { enqueueToQueue } from "../shards/queue-ops";
import { queueRoute } from "../shards/queue-route";
import { fanOutOnQueue } from "../shards/fan-out";
import type { OperationContext } from "./context";
import { enqueueChecked, refuseUnrunnableFanOut } from "./enqueue-checks";

/**
 * Enqueues tasks onto a queue (its partitions and shards: src/shards/queue-ops.ts) and reports them:
 * the partitions that received tasks are woken, each new task's `enqueued` event published. With `checks`
 * (the API's enqueue, over HTTP and RPC), a push queue's tasks are checked against the processors that will
 * run them first, refusals named as the request names its fields (src/operations/enqueue-checks.ts).
 *
 * @example
 * const { tasks } = await enqueue(op, "emails", [{ type: "send", payload: {}, runAt: op.now }], { field: tasksField });
 */
export async function enqueue(
  op: OperationContext,
  queue: string,
  tasks: NewTask[],
  checks?: { field: TaskField },
  /** The tasks a queue's coordinator gathered (src/operations/gathered-enqueue.ts): counted there already. */
  gathered = false,
): Promise<EnqueueResult> {
  const route = await queueRoute(op.env, queue, op.now);
  const result = checks
    ? await enqueueChecked(op, route, tasks, checks.field)
    : await enqueueToQueue(op.env, route, tasks, op.now);
  op.effects.after({ ...enqueuedChange(queue, result), ...(gathered ? { gathered: true } : {}) });
  return { tasks: result.tasks, earliestRunAt: result.earliestRunAt };
}

/**
 * Enqueues children and their join in one atomic call (src/engine/fan-out.ts) on one partition of the queue,
 * after checking them against a push queue's processors as a plain enqueue's tasks are (a 400 naming the field,
 * nothing stored), and reports every task it made as an enqueue (the join is published as enqueued while it waits; its
 * release publishes `ready`).
 *
 * @example
 * const { tasks, join } = await enqueueFanOut(op, "chapters", chapters, { type: "stitch" }, tasksField);
 */
export async function enqueueFanOut(
  op: OperationContext,
  queue: string,
  children: NewTask[],
  join: NewTask,
  field: TaskField,
): Promise<FanOutResult> {
  const route = await queueRoute(op.env, queue, op.now);
  await refuseUnrunnableFanOut(op, route, children, join, field);
  const result = await fanOutOnQueue(op.env, route, children, join, op.now, field);
  op.effects.after(
    enqueuedChange(queue, {
      tasks: [...result.tasks, result.join],
      earliestRunAt: result.earliestRunAt,
      parts: [result.part],
      remoteDependencies: result.remoteDependencies,
    }),
  );
  return result;
}
