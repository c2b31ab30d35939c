import * as z from "zod";
import {
  CancelQueueBody,
  PauseBody,
  PauseResponse,
  EnqueueBatchBody,
  EnqueueBody,
  EnqueueResponse,
  EnqueuedTaskSchema,
  PurgeBody,
  QueueListResponse,
  QueueParams,
  QueueStatsResponse,
  RedriveBody,
  TaskListQuery,
  TaskListResponse,
} from "../../contracts/api";
import { oneTaskField, tasksField, type TaskField } from "../../contracts/task-field";
import { toTaskView } from "../../contracts/task-view";
import type { NewTask, QueueFlowState, UniqueKey } from "../../engine/store";
import { toIso } from "../../contracts/time";
import { listAllQueues } from "../../shards/cross-shard";
import { listTasksOf, purgeQueueOf, queueStatsOf } from "../../shards/queue-ops";
import { queueRoute, readRoute } from "../../shards/queue-route";
import { enqueue, enqueueFanOut } from "../enqueue";
import { enqueueWhereGathered } from "../gathered-enqueue";
import type { OperationContext } from "../context";
import { EdgeqError } from "../../contracts/errors";
import { BulkBody, BulkResponse } from "../../contracts/bulk";
import { bulkAction } from "../bulk";
import { queueFlowOf, STATS_TOP_KEYS } from "../../shards/flow-ops";
import { cancelQueue, pauseFlow, redrive } from "../queue";
import { defineOperation, jsonInput, queryInput } from "./define";

/** The API's operations on a queue's tasks (`/v1/queues/{queue}/…`; RPC `enqueue(queue, body)`, …). */

/** A queue's flow state as its stats show it (snake_case, as the API speaks). */
function flowStatsView({ paused, keys }: QueueFlowState) {
  return {
    paused,
    keys: keys.map(({ atLimit, ...k }) => ({ ...k, at_limit: atLimit })),
  };
}

/** Enqueue's body is one task or `{ tasks: [...] }`: a failure is explained against the one meant. */
function enqueueMeant(value: unknown) {
  const isBatch = typeof value === "object" && value !== null && !Array.isArray(value) && "tasks" in value;
  return isBatch ? EnqueueBatchBody : EnqueuedTaskSchema;
}

/**
 * The tasks an enqueue body asks for, as the operation takes them: `delay_s` and `run_at`, `start_by` and
 * `expires_in_s` resolved against the call's clock `now` (a deadline in the past or not after the run time is
 * a 400 naming its field), and the task's idempotency, debounce or singleton key.
 *
 * @example
 * newTasksOf({ payload: { to: "a@example.com" }, delay_s: 60 }, now); // [{ payload, runAt: now + 60_000, … }]
 */
export function newTasksOf(body: z.output<typeof EnqueueBody>, now: number): NewTask[] {
  const tasks = "tasks" in body ? body.tasks : [body];
  const field = fieldsOf(body);
  return tasks.map((task, i) => {
    const runAt =
      task.run_at !== undefined
        ? Date.parse(task.run_at)
        : task.delay_s !== undefined
          ? now + Math.round(task.delay_s * 1000)
          : now;
    return {
      id: task.id,
      type: task.type,
      payload: task.payload,
      priority: task.priority,
      runAt,
      maxAttempts: task.max_attempts,
      dedupeKey: task.dedupe_key,
      group: task.group,
      key: task.key,
      then: task.then,
      dependsOn: task.depends_on,
      onDependencyFailure: task.on_dependency_failure,
      startBy: startByOf(task, runAt, now, (name) => field(i, name)),
      unique: uniqueKeyOf(task),
    };
  });
}

/**
 * A task's start deadline against the call's clock: in the past, or not after the task's run time (a debounce's
 * is its window's end), it is a 400 naming the field it came in, and nothing is enqueued.
 */
function startByOf(
  task: NewTaskInput,
  runAt: number,
  now: number,
  field: (name: string) => string,
): number | undefined {
  const name = task.start_by !== undefined ? "start_by" : "expires_in_s";
  const startBy =
    task.start_by !== undefined
      ? Date.parse(task.start_by)
      : task.expires_in_s !== undefined
        ? now + Math.round(task.expires_in_s * 1000)
        : undefined;
  if (startBy === undefined) return undefined;
  const runsAt = task.debounce ? now + task.debounce.window_s * 1000 : runAt;
  if (startBy <= now) throw new EdgeqError("invalid_request", `${field(name)}: the start deadline is in the past`);
  if (startBy <= runsAt) {
    throw new EdgeqError(
      "invalid_request",
      `${field(name)}: the start deadline must come after the task's run time (${new Date(runsAt).toISOString()})`,
    );
  }
  return startBy;
}

/** A task's key of uniqueness over time, as the engine takes it (src/engine/unique-keys.ts). */
function uniqueKeyOf(task: NewTaskInput): UniqueKey | undefined {
  if (task.idempotency)
    return { mode: "idempotency", key: task.idempotency.key, windowMs: task.idempotency.window_s * 1000 };
  if (task.debounce) return { mode: "debounce", key: task.debounce.key, windowMs: task.debounce.window_s * 1000 };
  if (task.singleton) return { mode: "singleton", key: task.singleton.key, whileRunning: task.singleton.while_running };
  return undefined;
}

type NewTaskInput = z.output<typeof EnqueuedTaskSchema>;

/** How an enqueue body names its tasks' fields: `tasks[i].…` for a batch, the field alone for one task. */
export function fieldsOf(body: z.output<typeof EnqueueBody>): TaskField {
  return "tasks" in body ? tasksField : oneTaskField;
}

/**
 * A fan-out with its join (`{ tasks, join }`): one atomic call (src/engine/fan-out.ts). Ids of the caller's are
 * refused here, naming the field: a task the call did not make could stand in for a child or the join.
 */
async function fanOutAnswer(op: OperationContext, queue: string, body: z.output<typeof EnqueueBatchBody>) {
  const named = body.tasks.findIndex((t) => t.id !== undefined);
  if (named >= 0) throw new EdgeqError("invalid_request", `tasks[${named}].id: a fan-out's tasks take no id`);
  if (body.join!.id !== undefined) throw new EdgeqError("invalid_request", "join.id: a fan-out's join takes no id");
  const [join] = newTasksOf(body.join!, op.now);
  const result = await enqueueFanOut(op, queue, newTasksOf(body, op.now), join!, tasksField);
  return { tasks: result.tasks, join: result.join };
}

const StatsQuery = z.object({ group: z.string().min(1).max(128).optional() });

export const queueApi = {
  /** Enqueues one task, or up to 10,000 as `{ tasks: [...] }`; `delay_s` and `run_at` against the call's clock;
   * a push queue's tasks checked against the processors that will run them. */
  enqueue: defineOperation({
    params: QueueParams,
    input: jsonInput(EnqueueBody, enqueueMeant),
    answer: EnqueueResponse,
    run: async (op, { queue }, body) => {
      if ("tasks" in body && body.join !== undefined) return fanOutAnswer(op, queue, body);
      const tasks = newTasksOf(body, op.now);
      // A call of one, while the queue's coordinator gathers them: written there with others (gather.ts).
      const gathered = "tasks" in body ? null : await enqueueWhereGathered(op, queue, tasks[0]!);
      if (gathered !== null) return gathered;
      const result = await enqueue(op, queue, tasks, {
        // A refusal names the field as the body does: `tasks[i].payload`, or `payload` for one task.
        field: fieldsOf(body),
      });
      return { tasks: result.tasks };
    },
  }),

  /** A page of the queue's tasks in creation order (read from a replica where there is one). */
  list: defineOperation({
    params: QueueParams,
    input: queryInput(TaskListQuery),
    answer: TaskListResponse,
    run: async (op, { queue }, filter) => {
      const page = await listTasksOf(await readRoute(op.env, queue, { replica: true }), filter);
      return { tasks: page.tasks.map(toTaskView), next_cursor: page.next_cursor };
    },
  }),

  /** Counts per state, due work and lag (optionally one group), and flow control: the pause and busiest keys. */
  stats: defineOperation({
    params: QueueParams,
    input: queryInput(StatsQuery),
    answer: QueueStatsResponse,
    run: async (op, { queue }, scope) => {
      const route = await readRoute(op.env, queue, { replica: true });
      const [stats, flow] = await Promise.all([
        queueStatsOf(route, scope, op.now),
        queueFlowOf(route, STATS_TOP_KEYS, op.now),
      ]);
      return { ...stats, oldest_due_at: toIso(stats.oldest_due_at), flow: flowStatsView(flow) };
    },
  }),

  /** Every queue with its task counts per state. */
  all: defineOperation({
    params: undefined,
    input: undefined,
    answer: QueueListResponse,
    run: async (op) => ({ queues: await listAllQueues(op.env) }),
  }),

  /** Cancels the queue's live tasks (of one group, or all). */
  cancel: defineOperation({
    params: QueueParams,
    input: jsonInput(CancelQueueBody),
    answer: z.object({ cancelled: z.number().int(), cancel_requested: z.number().int() }),
    run: (op, { queue }, { group }) => cancelQueue(op, queue, { group }),
  }),

  /** Pauses or resumes the queue, or one key of it (flow control). */
  pause: defineOperation({
    params: QueueParams,
    input: jsonInput(PauseBody),
    answer: PauseResponse,
    run: (op, { queue }, body) => pauseFlow(op, queue, body),
  }),

  /** Moves dead (or cancelled) tasks back to pending with attempts reset. */
  redrive: defineOperation({
    params: QueueParams,
    input: jsonInput(RedriveBody),
    answer: z.object({ redriven: z.number().int(), ids: z.array(z.string()) }),
    run: (op, { queue }, scope) => redrive(op, queue, scope),
  }),

  /** Cancels, retries or redrives the tasks a filter matches (at most `limit` per database a call; a dry run
   * counts them); `more` says to call again. */
  bulk: defineOperation({
    params: QueueParams,
    input: jsonInput(BulkBody),
    answer: BulkResponse,
    run: async (op, { queue }, body) => {
      const { filter } = body;
      const { count, more } = await bulkAction(op, queue, {
        action: body.action,
        dryRun: body.dry_run,
        limit: body.limit,
        filter: {
          state: filter.state,
          type: filter.type,
          group: filter.group,
          key: filter.key,
          createdFrom: filter.created_after === undefined ? undefined : Date.parse(filter.created_after),
          createdBefore: filter.created_before === undefined ? undefined : Date.parse(filter.created_before),
        },
      });
      return { action: body.action, dry_run: body.dry_run, count, more };
    },
  }),

  /** Deletes finished tasks that finished before a time (at most MAX_PURGE_PER_CALL per database a call). */
  purge: defineOperation({
    params: QueueParams,
    input: jsonInput(PurgeBody),
    answer: z.object({ purged: z.number().int() }),
    run: async (op, { queue }, body) => {
      const before =
        body.before !== undefined ? Date.parse(body.before) : op.now - Math.round((body.older_than_s ?? 0) * 1000);
      return purgeQueueOf(await queueRoute(op.env, queue, op.now), { before, states: body.states });
    },
  }),
};
