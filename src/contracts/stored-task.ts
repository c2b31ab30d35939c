import type { TaskState } from "./states";

/**
 * A task as a task store holds it and hands it out (src/engine/store.ts): the domain type of every store
 * operation that returns a whole task (a lease, a heartbeat, a read by id, a listing). Declared here, not
 * taken from the Drizzle schema, so that a store of another layout (docs/design/packs.md) can build it from
 * whatever it keeps; the D1 store's rows have exactly these fields (src/engine/task-row.ts checks it at
 * compile time), so it hands its rows out unchanged.
 *
 * Times are integer milliseconds since the Unix epoch (UTC); JSON fields are JSON text as stored (never
 * parsed on the way through: a lease answer splices them in as they are, src/engine/task-row.ts).
 */
export interface StoredTask {
  /** ULID, time-ordered; a client may supply its own. */
  id: string;
  queue: string;
  /** What kind of work this is (selects the processor in push mode). */
  type: string;
  state: TaskState;
  /** Higher runs first. */
  priority: number;
  /** The task's input, JSON text. */
  payload: string;
  /** The task's output once completed, JSON text, or null. */
  result: string | null;
  /** JSON text: an array of `{ attempt, at, message, kind }`, every failure and lapsed lease, oldest first. */
  errors: string;
  /** Leases handed out so far (a refunded hand-back takes one back). */
  attempts: number;
  /** After this many attempts a failure is final (dead). */
  maxAttempts: number;
  /** Not leased before this time (delay, retry backoff). */
  runAt: number;
  /** The current lease's fencing token (every holder write presents it), or null. */
  leaseToken: string | null;
  /** Free-form name of the lease's holder (for inspection only). */
  leaseHolder: string | null;
  /** The lease is void from this time. */
  leaseExpiresAt: number | null;
  /** The current (or last) lease's length in seconds, as leased: what a heartbeat naming none extends by. */
  leaseVisibilityS: number | null;
  /** 1 when the current lease took the task over from an expired one (that attempt counted as failed). */
  leaseTookOverExpired: number | null;
  /** A provisional lease is void unless its holder claims it (any fenced write) before this time; null
   * once claimed, and for leases answered at once. */
  claimBy: number | null;
  /** How the last lease was ended by its holder (`complete:<token>`, `fail:<token>`, `release:<token>`): how
   * a repeated ack is recognised. */
  ackedWith: string | null;
  /** 1 once a cancel was asked for while processing; the holder learns it on its next heartbeat or ack. */
  cancelRequested: number;
  /** Unique among the queue's live (pending or processing) tasks. */
  dedupeKey: string | null;
  /** A library, tenant or batch: list, stats, cancel and redrive can be scoped to it. */
  groupKey: string | null;
  /** The task's key for flow control (docs/flow-control.md); the API's `key`. */
  flowKey: string | null;
  /** 1: unkeyed, enqueued while its queue had a flow config (the flow lease's `tasks_unkeyed` index). */
  flowUnkeyed: number | null;
  /** 0-100, reported by the holder. */
  progress: number | null;
  progressMessage: string | null;
  createdAt: number;
  updatedAt: number;
  /** First lease. */
  startedAt: number | null;
  /** Set exactly when the task leaves the live states (completed, dead, cancelled). */
  finishedAt: number | null;
  /** JSON text saved by the holder (a retry resumes from it), or null. */
  checkpoint: string | null;
  /** JSON text: the child task specs enqueued when this task completes (`then`), or null. */
  thenTasks: string | null;
  /** The slot of the queue partition the task belongs to when its id does not carry it, else null
   * (src/shards/task-slot.ts). */
  slot: number | null;
  /** JSON text: the ids this task depends on, or null (src/engine/dependencies.ts). */
  dependsOn: string | null;
  /** Dependencies not finished yet (the task is waiting while above 0), or null without dependencies. */
  waitingOn: number | null;
  /** What a dependency ending dead, cancelled or expired does: fail, cancel or continue; null without any. */
  onDependencyFailure: string | null;
  /** The run time asked for at enqueue, taken on release; null without dependencies. */
  readyAt: number | null;
  /** The priority asked for at enqueue, taken on release; null without dependencies. */
  readyPriority: number | null;
  /** The start deadline: not started by then, the task ends `expired` and is never leased; null for none. */
  startBy: number | null;
  /** A singleton task queued behind this running task of its key: not leased until that one finished. */
  afterId: string | null;
  /** JSON text: counter events of this task not yet folded into the counters (src/engine/counters-in-row.ts),
   * or null. A store's own bookkeeping, never shown. */
  uncounted: string | null;
}

/**
 * A queue's stored record: its config as stored (null: the default, src/engine/queue-config.ts) and the SQS
 * endpoint's settings and tags. What a queue move copies from one store to another, every field as stored.
 */
export interface StoredQueue {
  name: string;
  maxAttempts: number | null;
  visibilityTimeoutS: number | null;
  backoffBaseS: number | null;
  backoffCapS: number | null;
  retentionS: number | null;
  updatedAt: number;
  mode: string | null;
  processor: string | null;
  concurrency: number | null;
  rateLimitCount: number | null;
  rateLimitWindowS: number | null;
  maxRunS: number | null;
  sqsDelayS: number | null;
  sqsReceiveWaitS: number | null;
  /** JSON text: an object of tag -> value, or null. */
  sqsTags: string | null;
  /** JSON text: the queue's flow config (src/contracts/flow.ts), or null: no flow control. */
  flow: string | null;
}
