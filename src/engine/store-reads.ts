import type { TaskState } from "../contracts/states";
import type { CompletedScope } from "./completed-results";
import type { CounterSums, RecentCounts } from "./counters";
import type { LiveCounts, LiveFigures } from "./live-figures";
import type { ListFilter, QueueStats, StateCounts, TaskEventFields, TaskPage } from "./read";
import type { StoredTask } from "../contracts/stored-task";
import type { ThroughputMinute } from "./throughput";

/**
 * The reads of a task store (src/engine/store.ts). Each is one read of the store, writes nothing, and reads
 * in proportion to what it answers where it says so — never every finished task.
 */

/** Tasks and queues, as the API and the coordinators read them. */
export interface TaskReads {
  /** One task by id; `not_found` when the store has none. */
  getTask(id: string): Promise<StoredTask>;
  /** A task's state, or null when the store has no such task (reads no payload). */
  findTaskState(id: string): Promise<TaskState | null>;
  /** What events show of these tasks, as they are now; ids the store does not hold are left out. */
  readTaskEventFields(ids: string[]): Promise<TaskEventFields[]>;
  /** A page of a queue's tasks in id (creation) order, filtered, with the next page's cursor (null at the
   * end: a page exactly full has none). */
  listTasks(queue: string, filter: ListFilter): Promise<TaskPage>;
  /** Counts per state of a queue (optionally one group; all five states, zero included), its due pending
   * tasks and the oldest due one's run_at. */
  queueStats(queue: string, scope: { group?: string }, now: number): Promise<QueueStats>;
  /** Every queue with tasks or a stored config, by name, with its counts per state. */
  listQueues(): Promise<Array<{ queue: string; counts: StateCounts }>>;
  /**
   * The earliest time after `now` a live task of the queue becomes leasable: a pending task's run_at; with
   * `leases`, also a held lease's (an unclaimed provisional lease's claim deadline, an expired lease's
   * backoff). Null when none will be by itself. What a coordinator arms its alarm for.
   */
  nextRunAt(queue: string, now: number, opts?: { leases?: boolean }): Promise<number | null>;
  /** The results of a group's newest completed tasks of one type, newest first, as `pick` keeps them (null:
   * skip); stops once `limit` are kept. Reads a page (RESULTS_PAGE_SIZE) at a time. */
  collectCompletedResults<T>(scope: CompletedScope, limit: number, pick: (result: unknown) => T | null): Promise<T[]>;
  /** One queue's live tasks at `now`: pending and due, pending not yet due, processing. Reads live tasks only. */
  countLiveTasks(queue: string, now: number): Promise<LiveCounts>;
  /** The live figures (the gauges of /metrics, the inputs of health) of every queue with live tasks, or of
   * one. Reads live tasks only. */
  liveFigures(now: number, queue?: string): Promise<LiveFigures[]>;
}

/** The per-minute counters every state change adds to: read by /metrics, health and the charts, never
 * computed from tasks. */
export interface CounterReads {
  /** The counters summed per queue and type over the minutes from `since` (all time, folded totals
   * included, without it), optionally of one queue. */
  sumCounters(opts?: { since?: number; queue?: string }): Promise<CounterSums[]>;
  /** Failures and outcomes over the last 5 and 15 minutes and dead tasks over the last hour, per queue (or
   * of one): what health's rate checks read. */
  recentCounts(now: number, queue?: string): Promise<RecentCounts[]>;
  /** A queue's enqueued / completed / failed per minute from `since` to `now`, summed over task types. */
  throughputSeries(queue: string, since: number, now: number): Promise<ThroughputMinute[]>;
}
