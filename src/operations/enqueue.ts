import { enqueuedChange } from "../effects/changes";
import type { EnqueueResult, NewTask } from "../engine/enqueue";
import { enqueueToQueue } from "../shards/queue-ops";
import { queueRoute } from "../shards/queue-route";
import type { OperationContext } from "./context";

/**
 * Enqueues tasks onto a queue (its partitions and shards: src/shards/queue-ops.ts) and reports them:
 * the partitions that received tasks are woken, each new task's `enqueued` event published.
 *
 * @example
 * const { tasks } = await enqueue(op, "emails", [{ type: "send", payload: {}, runAt: op.now }]);
 */
export async function enqueue(op: OperationContext, queue: string, tasks: NewTask[]): Promise<EnqueueResult> {
  const route = await queueRoute(op.env, queue, op.now);
  const result = await enqueueToQueue(op.env, route, tasks, op.now);
  op.effects.after(enqueuedChange(queue, result));
  return { tasks: result.tasks, earliestRunAt: result.earliestRunAt };
}
