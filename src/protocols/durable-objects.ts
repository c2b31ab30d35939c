import * as z from "zod";
import {
  MAX_BATCH,
  MAX_PARTITIONS,
  MAX_TASK_WAIT_S,
  MAX_VISIBILITY_TIMEOUT_S,
  MAX_WAIT_S,
  MAX_WAITER_ID_CHARS,
  MIN_VISIBILITY_TIMEOUT_S,
} from "../contracts/limits";
import type { Refusal } from "../contracts/refusal";
import { TASK_STATES, type TaskState } from "../contracts/states";
import type { StoredTask } from "../contracts/stored-task";
import { TASK_EVENT_KINDS, type EventsPublish } from "../contracts/events";

/** A long-poll lease request, as the coordinator accepts it (validated again at this boundary). */
export const coordinatorLeaseSchema = z.object({
  queue: z.string().min(1),
  max: z.number().int().min(1).max(MAX_BATCH),
  /** null: the queue's configured visibility timeout. */
  visibilityTimeoutS: z.number().int().min(MIN_VISIBILITY_TIMEOUT_S).max(MAX_VISIBILITY_TIMEOUT_S).nullable(),
  holder: z.string().nullable(),
  waitMs: z
    .number()
    .int()
    .min(0)
    .max(MAX_WAIT_S * 1000),
  /** Names the wait so the caller can withdraw it (`withdrawPoll`) when its client disconnects. */
  waiterId: z.string().min(1).max(MAX_WAITER_ID_CHARS).optional(),
  /** The caller withdraws the wait when its client hangs up, and the platform reports hang-ups to it
   * (src/operations/lease.ts): tasks handed to it after it waited are leased plainly (no claim window: an
   * expiry counts the attempt) and never taken back for another poll; a poll withdrawn while its lease is in
   * flight releases what it took. */
  hangUpReported: z.boolean().default(false),
  /** The partition this coordinator serves (src/shards/); it leases from its own first, then the others. */
  part: z.number().int().min(0).max(MAX_PARTITIONS).default(0),
});
export type CoordinatorLease = z.infer<typeof coordinatorLeaseSchema>;
/** What a caller sends (`part` may be left out: partition 0). */
export type CoordinatorLeaseInput = z.input<typeof coordinatorLeaseSchema>;

/** Withdraws a long poll: its client went away (request.signal) or asked (POST .../lease/withdraw). */
export const coordinatorWithdrawSchema = z.object({ waiterId: z.string().min(1).max(MAX_WAITER_ID_CHARS) });
export type CoordinatorWithdraw = z.infer<typeof coordinatorWithdrawSchema>;

/** A sibling partition's coordinator (`watcher`) holds long polls until `until` (ms): pass arrivals on. */
export const coordinatorWatchSchema = z.object({
  queue: z.string().min(1),
  /** The partition of the coordinator told. */
  part: z.number().int().min(0).max(MAX_PARTITIONS),
  watcher: z.number().int().min(0).max(MAX_PARTITIONS),
  until: z.number().int(),
});
export type CoordinatorWatch = z.infer<typeof coordinatorWatchSchema>;

/** Tasks became leasable on a sibling partition: serve the polls waiting here (they lease from all). */
/** `checkSessions`: a cancel was requested of a task a worker session of `queue` holds. */
export const coordinatorCheckSessionsSchema = z.object({ queue: z.string() });
export type CoordinatorCheckSessions = z.infer<typeof coordinatorCheckSessionsSchema>;

export const coordinatorWakeWaitersSchema = z.object({
  queue: z.string().min(1),
  part: z.number().int().min(0).max(MAX_PARTITIONS),
});
export type CoordinatorWakeWaiters = z.infer<typeof coordinatorWakeWaitersSchema>;

/** Tells the coordinator that tasks of its queue become due at `runAt` (ms). */
export const coordinatorNotifySchema = z.object({
  queue: z.string().min(1),
  runAt: z.number().int(),
  part: z.number().int().min(0).max(MAX_PARTITIONS).default(0),
  /** The wake-up of an enqueue call of one task: counted toward whether gathering pays (gather.ts). */
  arrival: z.boolean().optional(),
});
export type CoordinatorNotify = z.input<typeof coordinatorNotifySchema>;

/** What a coordinator answers a `notify` or a `gatherEnqueue`: whether single-task enqueues of its queue arrive
 * fast enough that it gathers them (src/coordinator/gather.ts) — the sender then sends its next ones there. */
export interface GatherHint {
  gather: boolean;
}

/**
 * `gatherEnqueue`: one plain task of a call of one (no id, key, group, `then`, dependencies, deadline or
 * uniqueness: what the store packs), its run time already resolved on the caller's clock, to be enqueued with
 * the others gathered within the linger. Validated again at this boundary.
 */
export const coordinatorGatherSchema = z.object({
  queue: z.string().min(1),
  task: z
    .object({
      type: z.string().optional(),
      payload: z.unknown().optional(),
      priority: z.number().int().optional(),
      runAt: z.number().int(),
      maxAttempts: z.number().int().optional(),
    })
    .strict(),
});
export type CoordinatorGather = z.infer<typeof coordinatorGatherSchema>;

/** One task's outcome in an enqueue's answer, as the API answers it. */
export interface GatheredTask {
  id: string;
  state: TaskState;
  deduplicated: boolean;
}

/** A gathered task's own outcome, or its own refusal (the API's code, message and status). */
export type GatheredOutcome = { task: GatheredTask } | { error: Refusal };

/** What `gatherEnqueue` answers: the task's outcome, and whether gathering still pays. */
export type GatheredAnswer = GatherHint & GatheredOutcome;

/** Waits up to `timeoutMs` for task `id` (of this coordinator's queue) to finish (GET /v1/tasks/{id}/wait);
 * `waiterId` names the wait so its caller can withdraw it when its client goes away. */
export const coordinatorAwaitTaskSchema = z.object({
  id: z.string().min(1),
  timeoutMs: z
    .number()
    .int()
    .min(0)
    .max(MAX_TASK_WAIT_S * 1000),
  waiterId: z.string().min(1).max(MAX_WAITER_ID_CHARS),
});
export type CoordinatorAwaitTask = z.infer<typeof coordinatorAwaitTaskSchema>;

/** Tasks of this coordinator's queue finished (completed, dead, cancelled): answer the waits for them. */
export const coordinatorTasksFinishedSchema = z.object({ ids: z.array(z.string().min(1)) });
export type CoordinatorTasksFinished = z.infer<typeof coordinatorTasksFinishedSchema>;

/** What a coordinator answers a `tasksFinished`: whether anyone waits for this queue's tasks, and, when
 * nobody does, for how long (ms) the sender may skip telling it (src/effects/task-waiters.ts). */
export interface TaskWaitersAnswer {
  listening: boolean;
  quietMs?: number;
}

/** The schedules' Scheduler: the time (ms) its alarm must fire by. */
export const schedulerArmSchema = z.object({ at: z.number().int().nonnegative() });
export type SchedulerArm = z.infer<typeof schedulerArmSchema>;

/** Rows the coordinator itself just leased, with what an event shows of each (no D1 read at the hub). */
export const eventRowSchema = z.object({
  id: z.string().min(1),
  type: z.string(),
  group_key: z.string().nullable(),
  state: z.enum(TASK_STATES),
  attempts: z.number().int(),
  run_at: z.number().int(),
  errors: z.string(),
  progress: z.number().int().nullable(),
  progress_message: z.string().nullable(),
});
export type EventRow = z.infer<typeof eventRowSchema>;
export const eventsPublishRowsSchema = z.object({
  queue: z.string().min(1),
  kind: z.enum(TASK_EVENT_KINDS),
  rows: z.array(eventRowSchema),
});
export type EventsPublishRows = z.infer<typeof eventsPublishRowsSchema>;

/*
 * The Durable Objects' RPC surfaces, as the Worker (src/env.ts) types their namespaces: one class per
 * job, each with its own binding and storage (docs/architecture.md, "Durable Objects"). The classes
 * implement these; callers see only these, so no layer below the objects imports them.
 */

/** COORDINATOR — one per queue partition: long-poll waiters, the alarm at the next leasable time, push dispatch. */
export interface QueueCoordinatorRpc extends Rpc.DurableObjectBranded {
  lease(input: CoordinatorLeaseInput): Promise<StoredTask[]>;
  notify(input: CoordinatorNotify): Promise<GatherHint>;
  gatherEnqueue(input: CoordinatorGather): Promise<GatheredAnswer>;
  withdrawPoll(input: CoordinatorWithdraw): Promise<boolean>;
  watch(input: CoordinatorWatch): Promise<void>;
  wakeWaiters(input: CoordinatorWakeWaiters): Promise<void>;
  waiting(): Promise<number>;
  awaitTask(input: CoordinatorAwaitTask): Promise<boolean>;
  tasksFinished(input: CoordinatorTasksFinished): Promise<TaskWaitersAnswer>;
  withdrawTaskWait(input: CoordinatorWithdraw): Promise<boolean>;
  waitingForTasks(): Promise<number>;
  checkSessions(input: CoordinatorCheckSessions): Promise<void>;
}

/** EVENT_HUB — one per queue: its event stream (WebSockets, seq, resume buffer, counts). */
export interface EventHubRpc extends Rpc.DurableObjectBranded {
  publish(input: EventsPublish): Promise<HubAnswer>;
  publishRows(input: EventsPublishRows): Promise<HubAnswer>;
}

/** What the event hub answers a publish: whether anyone hears the queue's events (a socket connected, or
 * one joining). "No" lets the publisher skip the queue's events for a while (src/effects/quiet-hubs.ts). */
export interface HubAnswer {
  listening: boolean;
}

/** SCHEDULER — one object (SCHEDULER_OBJECT) firing every schedule at its alarm. */
export interface SchedulerRpc extends Rpc.DurableObjectBranded {
  arm(input: SchedulerArm): Promise<void>;
}

/** The name of the one Scheduler object. */
export const SCHEDULER_OBJECT = "schedules";
