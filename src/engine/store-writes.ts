import type { AckOutcome, AckScope, FencedItem } from "./ack";
import type { CompleteItem } from "./complete";
import type { EnqueueOptions, EnqueueResult, NewTask } from "./enqueue";
import type { ExtendItem } from "./extend";
import type { FailItem } from "./fail";
import type { HeartbeatRequest } from "./heartbeat";
import type { EndedHandOut } from "./end-claim-windows";
import type { LeasedAnswer, LeaseRequest } from "./lease";
import type { PurgeOptions } from "./purge";
import type { RedriveScope } from "./redrive";
import type { ReturnedTask } from "./return-undelivered";
import type { StoredTask } from "../contracts/stored-task";

/**
 * The state changes of a task store (src/engine/store.ts), in four groups: tasks in and leases out, the
 * holder's fenced writes, a long poll's coordinator's returns and claim-window ends, and an operator's. Each
 * is atomic — one statement or one transaction of the store — and says which invariant it keeps; every one
 * counts what it changed in the per-minute counters.
 */

/** Tasks in, leases out. */
export interface TaskWrites {
  /**
   * Creates up to MAX_ENQUEUE_TASKS tasks in `queue`, answering each in input order. An id this queue
   * already holds, or a dedupe key a live task of the queue holds (a repeat within the call included), creates
   * nothing: that task is answered `deduplicated`. An id that is a task of another queue refuses the call,
   * `id_in_other_queue`; a payload too large or not storable exactly refuses it (400s naming the field).
   * Every check runs before anything is stored. Atomic per chunk (MAX_ENQUEUE_CHUNK_TASKS tasks,
   * MAX_ENQUEUE_CHUNK_BYTES): a larger call stores chunk after chunk in input order, leases may run between
   * them, and a failure of the store midway leaves the earlier chunks (ids and keys make the retry safe).
   * `options.field` names task i's fields in a refusal (default `tasks[i].…`); `options.checkedFor` is the
   * queue processing the tasks were checked for: the first chunk stores nothing unless the queue still runs
   * its tasks so, and then `ProcessingChanged` is thrown with the stored processing.
   */
  enqueueTasks(queue: string, tasks: NewTask[], now: number, options?: EnqueueOptions): Promise<EnqueueResult>;
  /**
   * Leases up to `max` leasable tasks of a queue (src/engine/redelivery.ts: pending and due; a provisional
   * lease unclaimed past its claim deadline, taken over with its attempt refunded; an expired lease with
   * attempts left once its backoff is due, its attempt recorded as `lease expired` and counted failed), in
   * lease order (priority
   * DESC, run_at, id): each processing, its attempt counted, under a fresh random token, expiring at
   * `now + visibilityTimeoutS` (null: the queue's, read atomically with the lease). Atomic: no task is leased
   * twice at once by concurrent callers, and a task taken over voids the previous holder's token. Answered in
   * lease order.
   */
  leaseTasks(request: LeaseRequest, now: number): Promise<StoredTask[]>;
  /** The same lease as `leaseTasks`, with the same guarantees, answered as the API renders it: each task's
   * LeasedTaskView as JSON text, in lease order (the HTTP lease's path). */
  leaseAnswers(request: LeaseRequest, now: number): Promise<LeasedAnswer[]>;
}

/** A holder's acks of one queue, by kind (an ack that carries the next lease: HolderWrites.ackThenLease). */
export interface HolderAcks {
  complete?: CompleteItem[];
  fail?: FailItem[];
  release?: FencedItem[];
}

/**
 * The holder's writes, each fenced: admitted only under the task's current token while it is processing and
 * before its lease expires — every other item is `lease_lost` (or `not_found`) and changes nothing. A
 * provisional lease stays its holder's past its claim deadline until another lease takes it over (replacing
 * the token); every admitted write claims it. A task whose cancel was requested ends `cancelled` instead
 * (`task_cancelled`). Batch forms judge each item on its own, answer in input order, apply a repeated id once
 * (its later items `invalid_request`), and are one atomic step of the store.
 */
export interface HolderWrites {
  /**
   * Completes processing tasks, storing each result (over MAX_PAYLOAD_BYTES: `payload_too_large`; not
   * storable exactly: `invalid_request`; either fails its own item only). The `then` children of each task
   * completed are created atomically with its completion (never a parent without its children, never
   * children of a parent not completed), reported on its outcome. Repeating a completion that was applied,
   * with its token, answers `repeated: true` and changes nothing.
   */
  completeTasks(items: CompleteItem[], now: number, scope?: AckScope): Promise<AckOutcome[]>;
  /**
   * An ack that carries the next lease: completes, fails and releases `acks` as the three calls do (scoped to
   * `request.queue`; outcomes in the order complete, fail, release, each in input order), then leases as
   * leaseAnswers does, after them — never a task just completed, and a task just failed or released when it is
   * due. Steps atomic each, as the calls are, answered together; a store may make them in one round trip (the
   * served store does for pack tasks this isolate leased on a queue whose packs came first here, and for
   * completions of row tasks on a queue whose packs did not: src/engine/hybrid/hybrid-store.ts).
   */
  ackThenLease(
    acks: HolderAcks,
    request: LeaseRequest,
    now: number,
  ): Promise<{ outcomes: AckOutcome[]; leased: LeasedAnswer[] }>;
  /**
   * Fails processing tasks: retryable with attempts left → pending after `retryAfterS` or the queue's
   * capped, jittered backoff; permanent or the last attempt → dead. Each failure is appended to the task's
   * errors (the message truncated to MAX_ERROR_MESSAGE_CHARS). A repeat with the same token is `repeated`.
   */
  failTasks(items: FailItem[], now: number, scope?: AckScope): Promise<AckOutcome[]>;
  /** Hands leased tasks back unfinished: pending at once, the attempt refunded. A repeat with the same token
   * is `repeated` until the task's next lease ends. */
  releaseTasks(items: FencedItem[], now: number, scope?: AckScope): Promise<AckOutcome[]>;
  /** Extends (and claims) leases: to `now + visibilityTimeoutS`, else by each lease's own length; the
   * outcome's `lease_expires_at` is the new expiry. */
  extendLeases(items: ExtendItem[], now: number, scope?: AckScope): Promise<AckOutcome[]>;
  /** One task's heartbeat: extends its lease (by `extendS`, else its own length), stores progress and
   * checkpoint (absent: kept). Refused: throws `lease_lost`, `not_found` or `task_cancelled`. */
  heartbeatTask(request: HeartbeatRequest, now: number): Promise<StoredTask>;
  /** Checks, writing nothing, that `leaseToken` holds a live lease on the task (for writes to another store,
   * such as an artifact): the task, or throws `lease_lost` / `not_found` as a fenced write would. */
  assertLeaseHeld(id: string, leaseToken: string, now: number): Promise<StoredTask>;
}

/** What a long poll's coordinator does with the provisional leases it handed out and nobody claimed. Not
 * holder writes: guarded by the token handed out and a claim still pending (`claim_by` set, not passed), so
 * a lease claimed meanwhile, taken over, finished, or whose cancel was requested is left alone. */
export interface HandOutWrites {
  /** Returns to pending the leases whose answer never left the coordinator (the poll was withdrawn while they were in
   * flight): each pending again at once, its attempt refunded, its token void. Answers the tasks returned. */
  returnUndelivered(items: FencedItem[], now: number): Promise<ReturnedTask[]>;
  /**
   * Ends the claim window of hand-outs whose answer was given (a withdrawn poll's, or ones left unclaimed
   * while other polls wait), now: at most `limit` of them, the first unclaimed ones in `items`' order. Nothing
   * else changes — the next lease takes each over (attempt refunded), and until one does its holder's own
   * fenced writes are still accepted. Answers the hand-outs whose window it ended.
   */
  endClaimWindows(items: FencedItem[], now: number, limit?: number): Promise<EndedHandOut[]>;
}

/** What a queue-wide cancel changed. */
export interface QueueCancelled {
  /** Pending tasks cancelled at once. */
  cancelled: number;
  /** Processing tasks asked to stop (their holder learns it on its next heartbeat or ack). */
  cancel_requested: number;
  /** The ids of the tasks this call cancelled (for their events), not of those only asked to stop. */
  ids: string[];
  /** A task it cancelled may have held its flow key (keyed and started): the key's next task may go now. */
  freesFlowKey: boolean;
}

/** An operator's writes: cancel, retry, redrive, purge. */
export interface OperatorWrites {
  /** Cancels one task: pending → cancelled at once; processing → cancel requested. A finished task, or a
   * second cancel while processing, is `invalid_transition`; an unknown id `not_found`. */
  cancelTask(id: string, now: number): Promise<StoredTask>;
  /** Cancels every live task of a queue (optionally of one group) that no cancel is pending for, as
   * `cancelTask` does, in one atomic step. */
  cancelQueueTasks(queue: string, scope: { group?: string }, now: number): Promise<QueueCancelled>;
  /** Revives one dead or cancelled task: pending now, attempts reset, error history kept. Another state is
   * `invalid_transition`; its dedupe key held by a live task, `dedupe_conflict` (nothing changes). */
  retryTask(id: string, now: number): Promise<StoredTask>;
  /** Revives a queue's dead (or cancelled) tasks as `retryTask` does, in id order, at most `limit` (and
   * MAX_ROWS_PER_TICK_STATEMENT) per call; one whose dedupe key a live task holds (or another task revived
   * by the same call took) is skipped, never counted against the limit. Answers the ids revived. */
  redriveQueue(queue: string, scope: RedriveScope, now: number): Promise<{ redriven: number; ids: string[] }>;
  /** Deletes a queue's finished tasks that finished strictly before `before`, at most `limit` (and
   * MAX_PURGE_PER_CALL) per call; never a live task. */
  purgeTasks(queue: string, options: PurgeOptions): Promise<{ purged: number }>;
}
