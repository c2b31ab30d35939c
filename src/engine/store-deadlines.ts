import type { ExpiredTask } from "./expire";

/**
 * Time-bound task rules (docs/uniqueness-and-expiry.md): start deadlines and the keys of uniqueness over time.
 * The enqueue side of both is `enqueueTasks` (a task's `startBy` and `unique`), and the lease side is the
 * lease's leasability (no task at or after its deadline unless it started; none queued behind a live task of
 * its singleton key); these are what the cron tick does about them each minute. Every step reads in
 * proportion to what is due, is idempotent, and is safe when two ticks overlap.
 */
export interface Deadlines {
  /**
   * Ends as `expired` the live tasks that never started and whose start deadline is at or before `now`, at
   * most `limit` (and MAX_ROWS_PER_TICK_STATEMENT), earliest deadline first, atomically, each counted in the
   * `expired` counter. Never a task that started (a lease before its deadline), and no lease takes one at or
   * after its deadline, so a task is either leased or expired, never both. Answers the tasks expired.
   */
  expireOverdueTasks(now: number, limit?: number): Promise<ExpiredTask[]>;
  /**
   * Deletes keys whose claim ended (`expires_at <= now`) and whose task is no longer live, a bounded window
   * of keys per call from where the last call stopped. A key not pruned yet behaves as pruned: its next
   * enqueue claims it anew.
   */
  pruneExpiredKeys(now: number): Promise<{ pruned: number }>;
}
