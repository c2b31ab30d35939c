import { enqueuedChange } from "../effects/changes";
import type { EnqueueResult, NewTask, TaskField } from "../engine/enqueue";
import { enqueueToQueue } from "../shards/queue-ops";
import { queueRoute } from "../shards/queue-route";
import type { OperationContext } from "./context";
import { enqueueChecked } from "./enqueue-checks";

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
): Promise<EnqueueResult> {
  const route = await queueRoute(op.env, queue, op.now);
  const result = checks
    ? await enqueueChecked(op, route, tasks, checks.field)
    : await enqueueToQueue(op.env, route, tasks, op.now);
  op.effects.after(enqueuedChange(queue, result));
  return { tasks: result.tasks, earliestRunAt: result.earliestRunAt };
}
