import type { FrontOptions, QueueFront } from "./live-front";
import type { ReapResult } from "./reap";

/**
 * What the cron tick asks of a task store (src/engine/store.ts) each minute. Every step is idempotent and
 * safe when two ticks overlap or one stops half way, and reads in proportion to what changed, never the
 * whole live set (one store runs one statement at a time: a scan holds every request behind it).
 */
export interface Upkeep {
  /**
   * What the tick needs of each queue with live tasks, read from the front of its lease order: due pending
   * tasks (counted up to LIVE_FRONT_MIN_PENDING per priority and `dueCountFor`'s count per queue, `capped`
   * when it stopped short), the oldest due, expired and overrunning leases, whether anything is leasable, and
   * the lapsed leases to reap. Read-only.
   */
  readLiveFront(now: number, opts?: FrontOptions): Promise<QueueFront[]>;
  /**
   * Reaps those of `ids` whose lease has lapsed at `now` (at most MAX_ROWS_PER_TICK_STATEMENT), re-checking
   * each lapse as it writes, so a task taken over, acked or reaped since is left alone and none is reaped
   * twice: a provisional lease unclaimed and expired → pending at once, attempt refunded (before its expiry
   * an unclaimed lease is its holder's, or the next lease's to take over); a claimed lease expired → pending
   * after the expiry backoff, or dead when attempts are exhausted (cancelled when a cancel was requested),
   * `lease expired` recorded.
   */
  reapLapsedLeases(ids: string[], now: number): Promise<ReapResult>;
  /** Finds the lapsed leases (`readLiveFront`) and reaps up to `limit` of them (`reapLapsedLeases`). */
  reapExpiredLeases(now: number, limit?: number): Promise<ReapResult>;
  /** Deletes finished tasks past their queue's retention (retention_s, else the default), a bounded share
   * per call, going on from where the last call stopped; never a live task, nor one before its time. */
  pruneByRetention(now: number): Promise<{ pruned: number; windows: number }>;
  /** Folds per-minute counters older than COUNTER_MINUTES_KEPT_S into each (queue, type)'s totals, a
   * bounded number of minutes per call, atomically (a minute is never both folded and kept). */
  foldOldCounters(now: number): Promise<{ folded: number }>;
  /** Adds the counter events that recent tasks keep in their own rows to the per-minute counters, a bounded
   * window of tasks per call from a cursor, up to `now` less a grace, atomically with the cursor (a task's
   * events are added once, crash or not); `more` when the window was full (call again). The first call on a
   * database only places the cursor. */
  foldCountersInRows(now: number): Promise<{ tasks: number; more: boolean }>;
}
