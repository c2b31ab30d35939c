import { rateLimitedIfOverloaded } from "../contracts/overloaded";
import { refusedError } from "../contracts/refusal";
import { oneTaskField, tasksField } from "../contracts/task-field";
import type { EnqueueResult, NewTask } from "../engine/store";
import { gatherHints } from "../effects/gather-hints";
import { coordinatorOf } from "../effects/wake";
import type { Env } from "../env";
import type { ProcessorRegistry } from "../processors/registry";
import { operationContext, type OperationContext } from "./context";
import { enqueue } from "./enqueue";

/** A plain task, its run time resolved: what `gatherEnqueue` takes (src/protocols/durable-objects.ts). */
interface GatherableTask {
  type?: string;
  payload?: unknown;
  priority?: number;
  runAt: number;
  maxAttempts?: number;
}

type GatheredTask = EnqueueResult["tasks"][number];

/**
 * A task as a coordinator gathers it, or null when it is not one the store packs: a client's id, a dedupe
 * key, a group, a flow key, `then`, dependencies, a start deadline or a uniqueness key each keep it in its own
 * call (the store keeps such tasks in rows, and one of them in a gathered call would keep the whole call there:
 * src/engine/hybrid/route-enqueue.ts).
 */
export function gatherable(task: NewTask): GatherableTask | null {
  const plain =
    task.id === undefined &&
    task.dedupeKey === undefined &&
    task.group === undefined &&
    task.key === undefined &&
    (task.then ?? []).length === 0 &&
    (task.dependsOn ?? []).length === 0 &&
    task.onDependencyFailure === undefined &&
    task.startBy === undefined &&
    task.unique === undefined &&
    task.runAt !== undefined;
  if (!plain) return null;
  return {
    runAt: task.runAt!,
    ...(task.type === undefined ? {} : { type: task.type }),
    ...(task.payload === undefined ? {} : { payload: task.payload }),
    ...(task.priority === undefined ? {} : { priority: task.priority }),
    ...(task.maxAttempts === undefined ? {} : { maxAttempts: task.maxAttempts }),
  };
}

/**
 * The API's enqueue of one task, where this isolate heard that the queue's coordinator gathers its single
 * enqueues (src/effects/gather-hints.ts): the task goes there, to be written with the others that came within
 * the linger (src/coordinator/gather.ts), and its caller gets its own outcome or refusal. Null — write it here,
 * as any enqueue — when no coordinator gathers, the task is not one it gathers, or the coordinator refused it
 * unrun (overloaded).
 *
 * @example
 * const gathered = await enqueueWhereGathered(op, "emails", task);
 * if (gathered !== null) return gathered;
 */
export async function enqueueWhereGathered(
  op: OperationContext,
  queue: string,
  task: NewTask,
): Promise<{ tasks: GatheredTask[] } | null> {
  const part = gatherHints.partFor(queue);
  const plain = part === null ? null : gatherable(task);
  if (part === null || plain === null) return null;
  let answer;
  try {
    answer = await coordinatorOf(op.env, queue, part).gatherEnqueue({ queue, task: plain });
  } catch (error) {
    gatherHints.forget(queue);
    // An object refusing a request for load refused it before running it: nothing was written.
    if (rateLimitedIfOverloaded(error) !== null) return null;
    throw error;
  }
  gatherHints.answered(queue, part, answer);
  if ("error" in answer) throw refusedError(answer.error);
  return { tasks: [answer.task] };
}

/**
 * What a coordinator runs for the tasks it gathered: the API's enqueue of them as one call (a push queue's
 * checked against the Worker's processors; one task named as a call of one names its fields), in the object.
 *
 * @example
 * class Coordinator extends QueueCoordinator {
 *   constructor(ctx, env) { super(ctx, env, { processors, enqueueGathered: enqueueGatheredWith(processors) }); }
 * }
 */
export function enqueueGatheredWith(processors: ProcessorRegistry) {
  return async (
    env: Env,
    waitUntil: (work: Promise<unknown>) => void,
    queue: string,
    tasks: NewTask[],
  ): Promise<{ tasks: GatheredTask[] }> => {
    const op = operationContext({ env, processors, waitUntil });
    const field = tasks.length === 1 ? oneTaskField : tasksField;
    const { tasks: answers } = await enqueue(op, queue, tasks, { field }, true);
    return { tasks: answers };
  };
}
