import { sql, type SQL } from "drizzle-orm";
import { expiryBackoffMsSql } from "./retry-policy";

/**
 * When a live task may be leased — one definition for the lease that takes it, the coordinator's alarm
 * that waits for it and the cron reaper that tidies after it. A task is leasable when it is:
 * - pending and due (`run_at <= now`);
 * - processing under a provisional lease nobody claimed in time (`claim_by <= now`: its claim window ended,
 *   or the coordinator took it back): handed to a long poll whose client may be gone, so the next lease
 *   takes it over with the attempt refunded, no backoff. Until one does, the lease is still its holder's
 *   (`leaseFenceSql` admits it): a live client that is merely slow loses it only to another lease;
 * - processing under an expired lease with attempts left and no cancel requested, once the expiry backoff
 *   has passed: redelivered as SQS does at its visibility timeout, without waiting for the cron tick.
 * A processing task whose last attempt expired, or whose cancel was requested, is not leasable: the
 * reaper makes it dead or cancelled.
 *
 * Two conditions hold for every kind (`startableSql`), checked by the lease statement's UPDATE itself so that
 * no leaser, however concurrent, takes a task they exclude:
 * - a task with a start deadline (`start_by`) that never started is not leasable at or after it: the cron
 *   tick ends it `expired` (src/engine/expire.ts). One that started before it is not bound by it (retries);
 * - a singleton task queued behind the running task of its key (`after_id`) waits until that one finished.
 *
 * These are SQL fragments over the `tasks` row being read or updated.
 */

/** A provisional lease (handed to a long poll after it waited) that was not claimed by `now`. */
export function unclaimedSql(now: number): SQL {
  return sql`(tasks.state = 'processing' AND tasks.claim_by IS NOT NULL AND tasks.claim_by <= ${now})`;
}

/** A provisional lease nobody claimed that has also expired: what the reaper hands back (attempt refunded).
 * Before its expiry an unclaimed lease is left to its holder, or to the next lease to take over. */
export function unclaimedExpiredSql(now: number): SQL {
  return sql`(${unclaimedSql(now)} AND tasks.lease_expires_at <= ${now})`;
}

/** An expired, claimed lease (its holder went silent) — the attempt counts. */
export function expiredClaimedSql(now: number): SQL {
  return sql`(tasks.state = 'processing' AND tasks.claim_by IS NULL AND tasks.lease_expires_at <= ${now})`;
}

/** The time a live task becomes leasable (ms), or NULL when only the reaper can move it on. */
export function leasableAtSql(): SQL {
  return sql`CASE
    WHEN tasks.state = 'pending' AND tasks.start_by <= tasks.run_at AND tasks.started_at IS NULL THEN NULL
    WHEN tasks.state = 'pending' THEN tasks.run_at
    WHEN tasks.cancel_requested = 1 THEN NULL
    WHEN tasks.claim_by IS NOT NULL THEN tasks.claim_by
    WHEN tasks.attempts < tasks.max_attempts THEN tasks.lease_expires_at + ${expiryBackoffMsSql()}
    ELSE NULL END`;
}

/** True for a live task leasable at `now` (see the module comment). */
export function leasableSql(now: number): SQL {
  return sql`((${leasableAtSql()}) <= ${now} AND ${startableSql(now)})`;
}

/**
 * Not past its start deadline unless it started, and not queued behind a live task of its singleton key. Both
 * columns are null for a task that uses neither, so the plain task pays one comparison each.
 */
export function startableSql(now: number): SQL {
  return sql`(tasks.start_by IS NULL OR tasks.started_at IS NOT NULL OR tasks.start_by > ${now})
    AND (tasks.after_id IS NULL
      OR NOT EXISTS (SELECT 1 FROM tasks ahead WHERE ahead.id = tasks.after_id AND ahead.finished_at IS NULL))`;
}
