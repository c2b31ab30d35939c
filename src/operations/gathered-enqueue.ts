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

/** The fields of a task a coordinator gathers: a plain task's, what the store packs (src/engine/hybrid/
 * route-enqueue.ts). A task with any other field set — an id, a dedupe key, a group, a flow key, `then`,
 * dependencies, a deadline, a uniqueness key — keeps its own call: the store keeps it in rows, and one such task in
 * a gathered call would keep the whole call there. Listed by what is kept, not by what is refused, so that a
 * field added to NewTask is never dropped on the way to the coordinator: such a task is written here. */
const GATHERED_FIELDS: ReadonlySet<string> = new Set(["type", "payload", "priority", "runAt", "maxAttempts"]);

/** The task as a coordinator gathers it, or null when it has a field a gathered task does not take. */
export function gatherable(task: NewTask): GatherableTask | null {
  const set = Object.entries(task).filter(([, value]) => value !== undefined);
  if (task.runAt === undefined || set.some(([field]) => !GATHERED_FIELDS.has(field))) return null;
  return Object.fromEntries(set) as unknown as GatherableTask;
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
