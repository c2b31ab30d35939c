import { ZodError } from "zod";
import { describeZodError } from "../contracts/describe-zod-error";
import { EdgeqError } from "../contracts/errors";
import type { EnqueueResult, NewTask, TaskField } from "../engine/store";
import { joinField } from "../contracts/task-field";
import { ProcessingChanged, processingOf, PULL, type QueueProcessing } from "../contracts/queue-processing";
import type { ProcessorRegistry } from "../processors/registry";
import { queueConfigOf } from "../shards/queue-config-ops";
import { enqueueToQueue } from "../shards/queue-ops";
import type { QueueRoute } from "../shards/queue-route";
import type { OperationContext } from "./context";

/**
 * Why a push queue would take tasks it can never run, or null: each task's processor (the queue's
 * `processor`, else the task's `type`, "default" when it has none) must be one this Worker registered, and
 * its payload must pass that processor's schema — checked at enqueue, where the client can still fix it, not
 * at the first run, where the task would be dead. A pull queue's tasks are its workers' business.
 *
 * @example
 * unrunnable(registry, "notes", { mode: "push", processor: null }, [{ type: "tag", payload: {} }], tasksField);
 * // 'tasks[0].payload.text: Invalid input: expected string, received undefined (processor "tag" runs …)'
 */
export function unrunnable(
  registry: ProcessorRegistry,
  queue: string,
  processing: QueueProcessing,
  tasks: readonly NewTask[],
  field: TaskField,
): string | null {
  if (processing.mode !== "push") return null;
  const registered = registry.types().join(", ") || "none";
  for (const [i, task] of tasks.entries()) {
    const type = processing.processor ?? task.type ?? "default";
    const processor = registry.get(type);
    if (!processor && processing.processor !== null) {
      return `push queue ${queue} runs its tasks with processor "${type}", which this Worker does not have (registered: ${registered})`;
    }
    if (!processor) {
      return `${field(i, "type")}: push queue ${queue} runs each task with the processor of its type, and this Worker has none for "${type}" (registered: ${registered})`;
    }
    const parsed = processor.payload.safeParse(task.payload ?? null);
    if (!parsed.success) {
      // The issues' paths start inside the payload: named from the task's field down.
      const issues = parsed.error.issues.map((issue) => ({ ...issue, path: ["payload", ...issue.path] }));
      const described = describeZodError(new ZodError(issues), "payload");
      return `${prefixed(field, i, described)} (processor "${type}" runs this push queue's tasks)`;
    }
  }
  return null;
}

/** A described issue list (`payload.x: …`) named as the caller names task i's fields (`tasks[i].payload.x`). */
function prefixed(field: TaskField, i: number, described: string): string {
  const task = field(i, "");
  return task ? described.replace(/(^|; )payload/g, `$1${task}.payload`) : described;
}

/** Push queues this isolate has seen, by name, with their processing: what an enqueue expects to find first.
 * A queue not here is expected to be pull (the default, and most queues). Only push queues are kept, so it
 * holds at most a Worker's push queues. */
const knownPush = new Map<string, QueueProcessing>();

function remember(queue: string, processing: QueueProcessing): void {
  if (processing.mode === "push") knownPush.set(queue, processing);
  else knownPush.delete(queue);
}

/** How many times an enqueue checks its tasks again after the queue's processing changed under it. Twice in
 * a row needs two config writes within one enqueue's D1 round trips; a third is a loop, not a race. */
const MAX_CHECK_ROUNDS = 3;

/**
 * Enqueues tasks that a push queue can run (`unrunnable`), or refuses them all with a 400 naming the field,
 * nothing stored. The queue's processing is not read ahead: the tasks are checked against what this
 * isolate last saw (pull for a queue it has not seen in push mode), and the insert stores them only while
 * the queue is still so — in the same D1 call, so an enqueue stays one round trip; when it is not, the
 * stored processing comes back in that call and the tasks are checked again. A refusal is only ever made
 * against the stored processing (read when memory refused). A route over several shards (a partitioned
 * queue spread out) reads the processing first instead: a guard per shard could leave one shard's share
 * stored and another's refused.
 *
 * @example
 * const result = await enqueueChecked(op, route, tasks, tasksField);
 */
export async function enqueueChecked(
  op: OperationContext,
  route: QueueRoute,
  tasks: NewTask[],
  field: TaskField,
): Promise<EnqueueResult & { parts: number[] }> {
  const oneShard = new Set(route.parts.map((part) => part.shard.name)).size === 1;
  const read = async () => processingOf(await queueConfigOf(route));
  // What the tasks are checked against, and whether it was read from D1 (else this isolate's memory).
  let processing = oneShard ? (knownPush.get(route.queue) ?? PULL) : await read();
  let stored = !oneShard;
  for (let round = 1; ; round++) {
    const problem = unrunnable(op.processors, route.queue, processing, tasks, field);
    if (problem !== null && !stored) {
      // Refused against memory: the queue may have changed since (a push queue turned pull). Refuse only
      // what the stored processing refuses (one read, on a path that is a client's mistake).
      processing = await read();
      stored = true;
      remember(route.queue, processing);
      continue;
    }
    if (problem !== null) throw new EdgeqError("invalid_request", problem);
    try {
      const result = await enqueueToQueue(op.env, route, tasks, op.now, {
        field,
        checkedFor: oneShard ? processing : undefined,
      });
      remember(route.queue, processing);
      return result;
    } catch (error) {
      if (!(error instanceof ProcessingChanged) || round >= MAX_CHECK_ROUNDS) throw error;
      processing = error.processing;
      stored = true;
      remember(route.queue, processing);
    }
  }
}

/**
 * Refuses a fan-out (children and their join) that a push queue could not run, with a 400 naming the field
 * (`tasks[i].payload.text`, `join.type`), before anything is stored: each child and the join are checked as a
 * plain enqueue's tasks are (`unrunnable`). The queue's processing is read first (one primary-key read): the
 * fan-out's batch carries no guard, so memory is not trusted here, as for a queue spread over several shards.
 * A config written between this read and the batch is checked by the processor at run time, as ever.
 *
 * @example
 * await refuseUnrunnableFanOut(op, route, chapters, { type: "stitch" }, tasksField);
 */
export async function refuseUnrunnableFanOut(
  op: OperationContext,
  route: QueueRoute,
  children: readonly NewTask[],
  join: NewTask,
  field: TaskField,
): Promise<void> {
  const processing = processingOf(await queueConfigOf(route));
  remember(route.queue, processing);
  const problem =
    unrunnable(op.processors, route.queue, processing, children, field) ??
    unrunnable(op.processors, route.queue, processing, [join], joinField);
  if (problem !== null) throw new EdgeqError("invalid_request", problem);
}
