import { sql } from "drizzle-orm";
import { blob, check, index, integer, primaryKey, real, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { bucketColumn, HISTOGRAM_BOUNDS_S, HISTOGRAMS } from "./histogram-buckets";

/**
 * The one task table, shared by every queue and task type. This file is the source of truth:
 * `npm run db:generate` writes migrations/ from it (append-only), and a test fails when the migrated
 * table drifts from these columns.
 *
 * Cost design (D1 bills every row written, and every index entry inserted counts as another row):
 * - The table is WITHOUT ROWID (added to the generated migration; drizzle-kit cannot express it), so the
 *   primary key *is* the table and costs no separate index entry.
 * - One partial index over live tasks (`finished_at IS NULL`), keyed on columns a lease does not touch,
 *   so a lease rewrites only the table row. Index deletions are not billed; insertions are.
 * - A successful life is 4 rows written: enqueue 2 (row + live index entry), lease 1, complete 1; the
 *   retention prune's delete is a fifth, except where an enqueue of one reuses the row instead
 *   (src/engine/reuse-rows.ts: a new column needs its default there, a test compares every column).
 *
 * All times are integer milliseconds since the Unix epoch (UTC); the API renders them as ISO-8601.
 */
export const tasks = sqliteTable(
  "tasks",
  {
    /** ULID, time-ordered; a client may supply its own (re-enqueueing an existing id is a no-op). */
    id: text("id").primaryKey(),
    /** Queue name; one coordinator Durable Object per queue. */
    queue: text("queue").notNull(),
    /** What kind of work this is (selects the processor in push mode). */
    type: text("type").notNull().default("default"),
    /** pending | processing | completed | dead | cancelled — see src/contracts/states.ts. */
    state: text("state").notNull(),
    /** Higher runs first. */
    priority: integer("priority").notNull().default(0),
    /** The task's input, JSON text. */
    payload: text("payload").notNull().default("null"),
    /** The task's output when completed, JSON text. */
    result: text("result"),
    /** JSON array of { attempt, at, message, kind }: every failure and expired lease, oldest first. */
    errors: text("errors").notNull().default("[]"),
    /** Leases handed out so far (incremented by each lease). */
    attempts: integer("attempts").notNull().default(0),
    /** After this many attempts a failure is final (dead). Copied from the queue config at enqueue. */
    maxAttempts: integer("max_attempts").notNull(),
    /** Not leased before this time (delay, retry backoff). */
    runAt: integer("run_at").notNull(),
    /** Fencing token of the current lease; every write by the holder must present it. After a completion
     * with `then`, the ack's nonce, which ties the children insert to that very completion. */
    leaseToken: text("lease_token"),
    /** Free-form name of the worker holding the lease (for inspection only). */
    leaseHolder: text("lease_holder"),
    /** The lease is void from this time; the reaper then retries or buries the task. */
    leaseExpiresAt: integer("lease_expires_at"),
    /** The length of the current (or last) lease in seconds, as it was leased: the lease request's visibility
     * timeout, else the queue's at that moment. A heartbeat or extend that names no length extends by it, so
     * a lease taken for 600 s is not cut to the queue's default by its first heartbeat. Null for leases
     * handed out before this column existed (they fall back to the queue's). */
    leaseVisibilityS: integer("lease_visibility_s"),
    /** 1 when the current lease took the task over from an expired lease (its holder went silent) and so
     * recorded that attempt as `lease expired`; 0 or null otherwise. Read from the lease's RETURNING (which
     * sees only new values) so the lease counts that attempt as failed — once: the reaper ends only tasks
     * still under an expired lease, so an attempt is ended by one of the two, never both. */
    leaseTookOverExpired: integer("lease_took_over_expired"),
    /** Set while a lease handed to a long poll after it waited is not yet claimed: unless the holder makes
     * a fenced call (heartbeat, extend, complete, fail, release) before this time, the lease is void and the
     * task is leasable again with the attempt refunded — the client that waited may have gone. Null once
     * claimed, and for leases answered at once. */
    claimBy: integer("claim_by"),
    /** How the last lease ended by its holder: `complete:<token>`, `fail:<token>` or `release:<token>`, so
     * the holder repeating that very ack (its answer was lost) is told it was applied, not `lease_lost`. */
    ackedWith: text("acked_with"),
    /** 1 once a cancel was asked for while processing; the holder learns it on heartbeat or ack. */
    cancelRequested: integer("cancel_requested").notNull().default(0),
    /** Unique among the queue's live (pending or processing) tasks. */
    dedupeKey: text("dedupe_key"),
    /** A library, tenant or batch: list, stats, cancel and redrive can be scoped to it. */
    groupKey: text("group_key"),
    /** 0-100, reported by the holder's heartbeat. */
    progress: integer("progress"),
    /** Free text that goes with progress. */
    progressMessage: text("progress_message"),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
    /** First lease. */
    startedAt: integer("started_at"),
    /** Set exactly when the task leaves the live states (completed, dead, cancelled). */
    finishedAt: integer("finished_at"),
    /** JSON saved by the holder (heartbeat `checkpoint`); a retry resumes from it. Kept across attempts. */
    checkpoint: text("checkpoint"),
    /** JSON array of child task specs enqueued, in the same D1 batch, when this task completes. */
    thenTasks: text("then_tasks"),
    /** The slot of the queue partition this task belongs to, when its id does not carry it (a client's own
     * id, a task relayed into another partition, a chained child of either); null when the id carries it
     * (src/shards/task-slot.ts). What a partition's move selects by on a database that holds other
     * partitions of the queue too — in the row itself, so it costs no row written and no lookup. */
    slot: integer("slot"),
    /** The task's key for flow control (a tenant, an API account: docs/flow-control.md), the API's `key`;
     * null for an unkeyed task, which the `tasks_keyed` index leaves out (it costs what it did before). */
    flowKey: text("flow_key"),
    /** 1 for an unkeyed task enqueued while its queue had a flow config (its `tasks_unkeyed` entry: the flow
     * lease finds it behind a blocked keyed backlog); null otherwise, and no index entry (a plain task's cost). */
    flowUnkeyed: integer("flow_unkeyed"),
    /** JSON array of the ids this task depends on (`depends_on` at enqueue), or null: what its dependencies'
     * listing reads (src/engine/dependencies.ts). */
    dependsOn: text("depends_on"),
    /** How many of its dependencies have not finished yet; the task is `waiting` while it is above 0 (and
     * its run_at WAITING_RUN_AT, past every lease's range). Null for a task without dependencies. */
    waitingOn: integer("waiting_on"),
    /** What a dependency ending dead, cancelled or expired does to this task: `fail` (it ends dead),
     * `cancel` (it ends cancelled) or `continue` (it runs anyway); null without dependencies. */
    onDependencyFailure: text("on_dependency_failure"),
    /** The run time the task asked for (run_at / delay_s), taken when it is released (at the latest of it and
     * the release); null without dependencies. */
    readyAt: integer("ready_at"),
    /** The priority the task asked for, taken when it is released; while waiting its priority is
     * WAITING_PRIORITY, below every lease's range. Null without dependencies. */
    readyPriority: integer("ready_priority"),
    /** The task's start deadline (`start_by` / `expires_in_s`): not started by this time, it ends `expired`
     * (the cron tick: src/engine/expire.ts) and no lease hands it out (src/engine/redelivery.ts). Null: none. */
    startBy: integer("start_by"),
    /** A singleton task queued behind the running task of its key (`singleton.while_running: "replace"`):
     * not leased until that task has finished (src/engine/redelivery.ts). Null for every other task. */
    afterId: text("after_id"),
    /** JSON array of the counter events (`[counter, minute, ms]`) of this task's transitions not yet in
     * `task_counters`, while the counter fold has not passed its id (src/engine/counters-in-row.ts); null
     * once it has, and for tasks whose transitions are counted on their own path. */
    uncounted: text("uncounted"),
  },
  (t) => [
    // Lease order and reap scan. `finished_at IS NULL` (not `state IN (...)`) so that a lease, which
    // changes state but not finished_at, does not re-insert the entry (a billed row).
    index("tasks_live")
      .on(t.queue, sql`${t.priority} DESC`, t.runAt, t.id)
      .where(sql`${t.finishedAt} IS NULL`),
    // Dedupe among live tasks only; tasks without a key write no entry here.
    uniqueIndex("tasks_live_dedupe")
      .on(t.queue, t.dedupeKey)
      .where(sql`${t.dedupeKey} IS NOT NULL AND ${t.finishedAt} IS NULL`),
    // A keyed live task's place among its key's (flow control, src/engine/flow-lease.ts): the fresh ones
    // (started_at null) in lease order, then the started ones (in flight or awaiting a retry), whose count is
    // the key's running tasks. One entry at enqueue, rewritten once at the first lease; none for unkeyed tasks.
    index("tasks_keyed")
      .on(t.queue, t.flowKey, t.startedAt, sql`${t.priority} DESC`, t.runAt, t.id)
      .where(sql`${t.flowKey} IS NOT NULL AND ${t.finishedAt} IS NULL`),
    // The unkeyed live tasks of flow queues, in lease order (src/engine/flow-lease.ts): a lease finds them
    // however many keyed tasks of blocked keys lead the queue. None for tasks of a queue without flow config.
    index("tasks_unkeyed")
      .on(t.queue, sql`${t.priority} DESC`, t.runAt, t.id)
      .where(sql`${t.flowUnkeyed} IS NOT NULL AND ${t.finishedAt} IS NULL`),
    // No index for purge: ULID ids are time-ordered, so purge walks the primary key up to the
    // retention cutoff instead of paying an index entry on every task (src/engine/purge.ts).
    // `waiting` (on dependencies) is live; `expired` (not started by its deadline) is final. Both are in the
    // constraint since migration 0013 (a CHECK changes only by rebuilding the table), before the code that
    // makes them: src/contracts/states.ts lists the states the engine hands out.
    // The cron tick's expiry pass (src/engine/expire.ts): tasks with a deadline not started yet. Tasks without
    // one write no entry; a first lease takes the task out (a deletion, not billed).
    index("tasks_start_by")
      .on(t.startBy)
      .where(sql`${t.startBy} IS NOT NULL AND ${t.startedAt} IS NULL AND ${t.finishedAt} IS NULL`),
    check(
      "tasks_state",
      sql`${t.state} IN ('pending', 'waiting', 'processing', 'completed', 'dead', 'cancelled', 'expired')`,
    ),
    // The live index relies on this equivalence.
    check(
      "tasks_finished_iff_final",
      sql`(${t.state} IN ('pending', 'waiting', 'processing')) = (${t.finishedAt} IS NULL)`,
    ),
    check("tasks_progress", sql`${t.progress} IS NULL OR ${t.progress} BETWEEN 0 AND 100`),
  ],
);

/** Per-queue configuration; a queue with no row uses the defaults in src/engine/queue-config.ts. */
export const queues = sqliteTable("queues", {
  name: text("name").primaryKey(),
  maxAttempts: integer("max_attempts"),
  visibilityTimeoutS: integer("visibility_timeout_s"),
  backoffBaseS: integer("backoff_base_s"),
  backoffCapS: integer("backoff_cap_s"),
  /** Finished tasks older than this are pruned by the cron tick. */
  retentionS: integer("retention_s"),
  updatedAt: integer("updated_at").notNull(),
  /** push: the coordinator runs the processor; pull: external workers lease over HTTPS. */
  mode: text("mode"),
  /** Push mode: the processor type for every task of the queue; null runs each task's own `type`. */
  processor: text("processor"),
  /** Push mode: most tasks in flight at once. */
  concurrency: integer("concurrency"),
  /** Push mode: at most this many task starts per window (null: no limit). */
  rateLimitCount: integer("rate_limit_count"),
  /** The rate limit's window: 1 (per second) or 60 (per minute). */
  rateLimitWindowS: integer("rate_limit_window_s"),
  /** Longest a task of the queue should run (s): the default per-task time limit of `edgeq worker --exec`;
   * null for none. */
  maxRunS: integer("max_run_s"),
  /** SQS endpoint only (src/sqs/): the queue's DelaySeconds, the delay of messages sent without their own
   * (the native API takes delay_s per task instead); null for 0. */
  sqsDelayS: integer("sqs_delay_s"),
  /** SQS endpoint only: the queue's ReceiveMessageWaitTimeSeconds, the long-poll wait of a ReceiveMessage
   * that names none (the native API takes wait_s per lease); null for 0. */
  sqsReceiveWaitS: integer("sqs_receive_wait_s"),
  /** SQS endpoint only: the queue's tags (TagQueue, CreateQueue's tags) as a JSON object of key -> value;
   * null for none. Tags mean nothing to SQS and nothing to edgeq: they are stored and listed back. */
  sqsTags: text("sqs_tags"),
  /** Flow control (docs/flow-control.md): the queue's per-key limits, queue-wide rate and fair shares as JSON
   * (src/contracts/flow.ts); null: none, and its leases are today's statement. */
  flow: text("flow"),
});

/**
 * The state of each key of a flow-controlled queue (src/engine/flow-lease.ts), in one place: the queue's
 * database, read and written in the lease's own batch, so limits hold across isolates. The row with key ''
 * is the queue's own: its pause, its queue-wide rate's tokens and the round-robin cursor. A key's row is
 * made at its first enqueue and removed by a lease that finds it idle (no live task, tokens full, not paused).
 * WITHOUT ROWID (added to the migration by hand): the primary key is the table.
 */
export const flowKeys = sqliteTable(
  "flow_keys",
  {
    queue: text("queue").notNull(),
    /** The task key; '' for the queue itself. */
    key: text("key").notNull(),
    /** 1: nothing of the key (of the queue, for '') is handed out; enqueues are accepted. */
    paused: integer("paused").notNull().default(0),
    /** Tokens of the rate's bucket at `refilled_at` (null: a full bucket). */
    tokens: real("tokens"),
    refilledAt: integer("refilled_at"),
    /** '' row only: the last key a lease served or passed, where the next lease's round starts. */
    cursor: text("cursor"),
    /** No longer written (null): where a lease's round started, when its second statement computed the pick
     * again (before migration 0019). */
    windowFrom: text("window_from"),
    /** What the lease `lease_nonce` granted: a rate-limited key's tasks, or ('' row) the lease's total. */
    granted: integer("granted"),
    leaseNonce: text("lease_nonce"),
    /** '' row only: the ids the lease `lease_nonce` picked (JSON array), written by the first statement of the
     * lease's batch and leased by the second — the pick is computed once. Stale between leases. */
    picked: text("picked"),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.queue, t.key] })],
);

/** The counter columns of `task_counters`, one per transition counted. */
export const COUNTERS = ["enqueued", "leased", "completed", "failed", "dead", "cancelled", "expired"] as const;
export type CounterName = (typeof COUNTERS)[number];

/** An integer column that starts at 0, for counters and histogram buckets. */
const zero = (name: string) => integer(name).notNull().default(0);

/** Histogram columns: one per bucket (non-cumulative, the last above every bound), a count and a sum. */
const histogramColumns: Record<
  `${(typeof HISTOGRAMS)[number]}_${string}`,
  ReturnType<typeof zero>
> = Object.fromEntries(
  HISTOGRAMS.flatMap((h) => [
    ...Array.from({ length: HISTOGRAM_BOUNDS_S.length + 1 }, (_, i) => [bucketColumn(h, i), zero(bucketColumn(h, i))]),
    [`${h}_count`, zero(`${h}_count`)],
    [`${h}_sum_ms`, zero(`${h}_sum_ms`)],
  ]),
);

/**
 * Task counters per queue, task type and minute, kept incrementally by the engine (src/engine/counters.ts):
 * every call that changes task states upserts one row per (queue, type) it touched — so a batch of 100
 * costs one counter row, not 100 — and nothing is ever computed by scanning finished tasks. Rates (failures
 * in the last 5 minutes, dead in the last hour) read the recent minutes; totals add every row. The cron
 * tick folds minutes older than COUNTER_MINUTES_KEPT_S into the (queue, type, minute 0) row, so totals
 * stay exact and the table stays small. WITHOUT ROWID (added to the migration by hand): the primary key is
 * the table, an upsert writes one row.
 *
 * Wait time: from when a task became due (max(created_at, run_at)) to its first lease. Run time: from its
 * first lease to the end of its life (completed or dead), retries included.
 */
export const taskCounters = sqliteTable(
  "task_counters",
  {
    queue: text("queue").notNull(),
    type: text("type").notNull(),
    /** Start of the minute (ms since the epoch); 0 holds the totals of every folded minute. */
    minute: integer("minute").notNull(),
    enqueued: zero("enqueued"),
    leased: zero("leased"),
    /** Completions (one per task). */
    completed: zero("completed"),
    /** Failed attempts: every fail, and every expired lease — whether the reaper ends it or the next lease
     * takes it over (src/engine/lease.ts), counted once by whichever changes the row. */
    failed: zero("failed"),
    /** Tasks that went dead (attempts exhausted or a permanent failure). */
    dead: zero("dead"),
    cancelled: zero("cancelled"),
    /** Tasks that ended `expired`: not started by their start deadline (migration 0015). */
    expired: zero("expired"),
    ...histogramColumns,
  },
  (t) => [primaryKey({ columns: [t.queue, t.type, t.minute] })],
);

/**
 * Health per queue (src/health/): its thresholds and alert URL (the row `*` holds the defaults for every
 * queue), and the status last evaluated with the alert that announces a change. A queue has a row only once
 * it is configured or leaves `ok`, and an evaluation writes only when a status changes — evaluating is
 * almost free on D1's bill.
 */
export const queueHealth = sqliteTable("queue_health", {
  /** A queue name, or `*` for the defaults. */
  queue: text("queue").primaryKey(),
  /** JSON object of threshold overrides (src/health/thresholds.ts); null for none. */
  thresholds: text("thresholds"),
  /** Where status changes are POSTed (signed like the http processor's webhooks); null for none here. */
  alertUrl: text("alert_url"),
  /** ok | warn | critical, as last evaluated. */
  status: text("status").notNull().default("ok"),
  /** When the queue entered `status`. */
  statusSince: integer("status_since"),
  /** JSON array of the reasons for `status` at the last change. */
  reasons: text("reasons").notNull().default("[]"),
  /** The alert to deliver (JSON, with its id), null when none is owed. A newer change replaces it. */
  alertPending: text("alert_pending"),
  /** Delivery attempts of the pending alert so far. */
  alertAttempts: integer("alert_attempts").notNull().default(0),
  /** The pending alert is not tried before this time (backoff; a claim while one delivery is in flight). */
  alertNextAt: integer("alert_next_at"),
  /** The last alert delivered: when, and the status it announced. */
  lastAlertAt: integer("last_alert_at"),
  lastAlertStatus: text("last_alert_status"),
  /** Why the last delivery attempt failed (null after a success). */
  lastAlertError: text("last_alert_error"),
  updatedAt: integer("updated_at").notNull(),
});

/**
 * Recurring schedules (src/schedules/): each enqueues a task into its queue at every slot of its cron
 * expression (or `@every` interval), fired by the schedules coordinator's alarm. No secondary index: there
 * are few schedules, and every firing moves `next_run_at`, which an index would bill as another row.
 */
export const schedules = sqliteTable("schedules", {
  /** Unique name; also what every slot's task id is derived from. */
  name: text("name").primaryKey(),
  queue: text("queue").notNull(),
  /** A 5- or 6-field cron expression (seconds first when 6), or `@every <n>s|m|h|d`. */
  cron: text("cron").notNull(),
  /** IANA time zone the cron expression is read in. */
  timezone: text("timezone").notNull().default("UTC"),
  /** JSON: the task each slot enqueues (type, payload, priority, group, max_attempts, dedupe_key). */
  task: text("task").notNull(),
  /** skip: no task while the previous slot's task is pending or processing; allow: always. */
  overlap: text("overlap").notNull().default("skip"),
  /** After downtime: none (missed slots are skipped), last (the latest missed one), all (bounded). */
  catchUp: text("catch_up").notNull().default("none"),
  paused: integer("paused").notNull().default(0),
  /** The next slot to fire (ms); slots up to `now` are due. */
  nextRunAt: integer("next_run_at").notNull(),
  /** The last slot fired, its task, and what happened. */
  lastSlotAt: integer("last_slot_at"),
  lastTaskId: text("last_task_id"),
  /** enqueued | skipped_overlap (the previous task still live) | skipped_missed (catch_up) | error */
  lastOutcome: text("last_outcome"),
  /** Why the last firing failed (bad queue, task refused); null after a success. */
  lastError: text("last_error"),
  createdAt: integer("created_at").notNull(),
  updatedAt: integer("updated_at").notNull(),
});

export type TaskRow = typeof tasks.$inferSelect;
export type QueueRow = typeof queues.$inferSelect;

/**
 * The shard directory (src/shards/), kept on the first database (binding `DB`) only: where each queue's
 * partitions live. A row is written on a queue's first use and changes only when the queue is moved on
 * purpose, so adding a shard never relocates an existing queue.
 *
 * `slot` is a small integer unique per (queue, part), written into the ids edgeq generates for that
 * partition (src/shards/task-slot.ts): a single-task call finds its database from the id alone.
 */
export const placements = sqliteTable(
  "placements",
  {
    queue: text("queue").notNull(),
    /** 0 .. partitions-1; an unpartitioned queue has part 0 only. */
    part: integer("part").notNull(),
    slot: integer("slot").notNull(),
    /** The D1 binding name holding the partition: `DB`, `DB_1`, ... */
    shard: text("shard").notNull(),
    /** While a move runs and for a grace period after: the shard the partition is leaving. */
    movingFrom: text("moving_from"),
    /** copying (tasks being relayed), settling (all relayed; stale routes may still write), null. */
    moveState: text("move_state"),
    moveStartedAt: integer("move_started_at"),
    /** When the last task was relayed; the old shard stops being consulted a grace period later. */
    moveCopiedAt: integer("move_copied_at"),
    /** Tasks relayed so far by the current move. */
    moveRelayed: integer("move_relayed").notNull().default(0),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.queue, t.part] }), uniqueIndex("placements_slot").on(t.slot)],
);

/**
 * Where tasks whose id does not carry its partition's slot live (a client-supplied id, a child of such a
 * task): id -> slot. Written only when a deployment has more than one shard; on the first database.
 */
export const taskAddresses = sqliteTable(
  "task_addresses",
  {
    id: text("id").primaryKey(),
    slot: integer("slot").notNull(),
    /** When the address was written or last found still in use (src/shards/prune-addresses.ts). */
    checkedAt: integer("created_at").notNull(),
  },
  // The pruner walks addresses oldest-checked first.
  (t) => [index("task_addresses_checked").on(t.checkedAt)],
);

/**
 * Tasks in transit between shards (a queue being moved, a chained child whose queue lives elsewhere), on
 * the shard they leave: a task is moved here and deleted from `tasks` in one D1 batch, so it is never
 * live on two databases at once; then it is inserted on its destination (insert-or-ignore, by id) and
 * removed from here. A crash in between leaves it here, and the next relay delivers it.
 */
export const taskTransit = sqliteTable("task_transit", {
  id: text("id").primaryKey(),
  queue: text("queue").notNull(),
  /** Destination shard (binding name). */
  dest: text("dest").notNull(),
  /** Destination slot: the partition the task joins. */
  slot: integer("slot").notNull(),
  /** The whole `tasks` row as a JSON object. */
  row: text("row").notNull(),
  createdAt: integer("created_at").notNull(),
  /** The task's remote edges and waits, carried with it (src/engine/remote-dependencies.ts); null without. */
  edges: text("edges"),
});

/**
 * Where a cron sweep that walks a table in windows goes on from at the next tick, on each database: the
 * retention prune walks `tasks` in primary-key order a window at a time (src/engine/purge.ts), so a tick
 * reads a bounded number of rows however many tasks sit below the retention cutoff. One row per sweep,
 * rewritten only when the sweep moves.
 */
export const sweepCursors = sqliteTable("sweep_cursors", {
  name: text("name").primaryKey(),
  /** The last key the sweep read; "" to start again from the beginning. */
  position: text("position").notNull(),
});

/**
 * Dependencies between tasks of one database (src/engine/dependencies.ts): one row per (dependency,
 * dependent), written in the dependent's enqueue statement. `outcome` is null until the dependency finishes;
 * the statement batch that finishes it sets the outcome (its final state) and, in the same batch, counts it
 * off the dependent (`waiting_on`) — only edges still without an outcome are counted, so no edge is counted
 * twice, whoever finishes the dependency and however often. WITHOUT ROWID and no secondary index: an edge
 * costs one row written at enqueue and one when settled; a dependent's own dependencies are listed from its
 * `depends_on` column, a dependency's dependents by this key's prefix.
 */
export const taskEdges = sqliteTable(
  "task_edges",
  {
    dependency: text("dependency").notNull(),
    dependent: text("dependent").notNull(),
    /** The dependency's final state once it finished (completed, dead, cancelled, expired), else null. */
    outcome: text("outcome"),
  },
  (t) => [primaryKey({ columns: [t.dependency, t.dependent] })],
);

/**
 * Dependencies across databases, the dependency's half (src/engine/remote-dependencies.ts): a dependent on
 * another database. `outcome` is set by the trigger `tasks_owe_remote_settlements` (migrations/0018) in the
 * statement that finishes the dependency: from then on the row is a settlement owed, delivered by the effects
 * owner (or the cron's reconcile) to wherever the dependent is then, and marked `delivered_at` once delivered:
 * kept for the dependency's dependents page, deleted with the dependency by the retention prune.
 */
export const remoteEdges = sqliteTable(
  "remote_edges",
  {
    dependency: text("dependency").notNull(),
    dependent: text("dependent").notNull(),
    /** The dependent's queue: where its database is found at delivery (placements, moves). */
    dependentQueue: text("dependent_queue").notNull(),
    /** The dependency's final state once it finished, else null: non-null = a settlement owed. */
    outcome: text("outcome"),
    finishedAt: integer("finished_at"),
    createdAt: integer("created_at").notNull(),
    /** When the settlement was delivered (kept for the dependents page until the dependency is pruned). */
    deliveredAt: integer("delivered_at"),
  },
  (t) => [
    primaryKey({ columns: [t.dependency, t.dependent] }),
    // Only settlements owed: the reconcile reads those and nothing else.
    index("remote_edges_owed")
      .on(t.finishedAt)
      .where(sql`${t.outcome} IS NOT NULL AND ${t.deliveredAt} IS NULL`),
  ],
);

/**
 * Dependencies across databases, the dependent's half: one row per dependency on another database, counted
 * in the dependent's `waiting_on` while `outcome` is null. A delivery counts it off and sets `outcome` in one
 * batch, only while it is null: a repeated delivery changes nothing.
 */
export const remoteWaits = sqliteTable(
  "remote_waits",
  {
    dependent: text("dependent").notNull(),
    dependency: text("dependency").notNull(),
    /** The dependency's final state as delivered (or found at enqueue), else null: still counted. */
    outcome: text("outcome"),
  },
  (t) => [primaryKey({ columns: [t.dependent, t.dependency] })],
);

/**
 * Uniqueness over time (docs/uniqueness-and-expiry.md): which task holds a queue's idempotency, debounce or
 * singleton key, and until when. Written in the enqueue's own batch (src/engine/unique-keys.ts), one row per
 * key (WITHOUT ROWID, added to the migration by hand: the primary key is the table). Pruned by the cron tick
 * once past `expires_at` and its task no longer live, walking the primary key from a cursor (no index on
 * expires_at: it would be a second row written per key).
 */
export const idempotencyKeys = sqliteTable(
  "idempotency_keys",
  {
    queue: text("queue").notNull(),
    key: text("key").notNull(),
    /** idempotency | debounce | singleton: each mode's keys are their own (part of the primary key). */
    mode: text("mode").notNull(),
    /** The task an enqueue with this key is answered with (or replaces, or queues behind). */
    taskId: text("task_id").notNull(),
    /** idempotency: the end of the window; debounce: the task's run time; singleton: when it was claimed. */
    expiresAt: integer("expires_at").notNull(),
    /** singleton: the live task the key's task was queued behind (its `after_id`), null otherwise. */
    prevTaskId: text("prev_task_id"),
  },
  (t) => [primaryKey({ columns: [t.queue, t.mode, t.key] })],
);

/**
 * Packs (docs/design/packs.md, migration 0022): up to PACK_SLOTS tasks of one queue, type, priority, run_at and
 * max_attempts in one row, the storage of src/engine/packs/ (not served yet). WITHOUT ROWID (added to the
 * migration by hand). A task's id is its pack's id and its slot in two base32 characters
 * (src/engine/packs/pack-ids.ts); a client's own id goes through `pack_ids`.
 */
export const packs = sqliteTable(
  "packs",
  {
    id: text("id").primaryKey(),
    queue: text("queue").notNull(),
    type: text("type").notNull(),
    priority: integer("priority").notNull(),
    /** The run time the pack's tasks were enqueued for (a retried slot keeps its own in its body). */
    runAt: integer("run_at").notNull(),
    maxAttempts: integer("max_attempts").notNull(),
    /** The earliest time a slot becomes leasable, or null: what a lease's walk filters on (not indexed). */
    nextAt: integer("next_at"),
    /** The earliest time a slot other than a plain pending one becomes leasable, or null. */
    rareAt: integer("rare_at"),
    /** Slots; slots live (pending, processing); slots pending. Computed from `st` by one function. */
    n: integer("n").notNull(),
    live: integer("live").notNull(),
    ready: integer("ready").notNull(),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
    /** Set exactly when no slot is live: the pack leaves the live index. */
    finishedAt: integer("finished_at"),
    /** Bumped by every rewrite: a write checks it, in its batch, against the version it read. */
    ver: integer("ver").notNull().default(0),
    /** One character per slot: p pending, w waiting for a retry, r processing, c completed, d dead. */
    st: text("st").notNull(),
    /** One character per slot: its attempts, char(48 + attempts). */
    at: text("at").notNull(),
    /** One character per slot: its entry in `leases`, char(48 + index), or a space. */
    lk: text("lk").notNull(),
    /** JSONB array of lease entries. */
    leases: blob("leases").notNull(),
    /** JSONB array of the slots' bodies. LAST: reading a column after a large value walks its overflow pages. */
    slots: blob("slots").notNull(),
  },
  (t) => [
    index("packs_live")
      .on(t.queue, sql`${t.priority} DESC`, t.runAt, t.id)
      .where(sql`${t.finishedAt} IS NULL`),
    // A queue's finished packs in id order: listings and stats of one queue (src/engine/packs/listing.ts).
    // Written once when a pack finishes (migration 0023).
    index("packs_done")
      .on(t.queue, t.id)
      .where(sql`${t.finishedAt} IS NOT NULL`),
    check("packs_live_finished", sql`(${t.live} > 0) = (${t.finishedAt} IS NULL)`),
  ],
);

/** A dedupe key of a pack's task: (queue, key) -> the task holding it; a row whose task is no longer live is
 * taken over by the next enqueue with that key. WITHOUT ROWID. */
export const packKeys = sqliteTable(
  "pack_keys",
  {
    queue: text("queue").notNull(),
    dedupeKey: text("dedupe_key").notNull(),
    taskId: text("task_id").notNull(),
  },
  (t) => [primaryKey({ columns: [t.queue, t.dedupeKey] })],
);

/** A client-supplied task id -> its pack and slot (an id the client made cannot name its slot). WITHOUT ROWID. */
export const packIds = sqliteTable("pack_ids", {
  id: text("id").primaryKey(),
  queue: text("queue").notNull(),
  pack: text("pack").notNull(),
  slot: integer("slot").notNull(),
});

/** A task's result, errors or checkpoint too large to keep in its pack's row (src/engine/packs/spill.ts). */
export const packSpill = sqliteTable(
  "pack_spill",
  {
    taskId: text("task_id").notNull(),
    /** r result, er errors, cp checkpoint. */
    field: text("field").notNull(),
    /** JSON text. */
    value: text("value").notNull(),
  },
  (t) => [primaryKey({ columns: [t.taskId, t.field] })],
);
