import { sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { outcomeEvents, recordCounters } from "./counters";
import { MAX_ROWS_PER_TICK_STATEMENT } from "../contracts/limits";
import { expiredClaimedSql, unclaimedSql } from "./redelivery";
import { expiryBackoffMsSql, failureSetSql } from "./retry-policy";
import type { TaskState } from "../contracts/states";

export interface ReapResult {
  /** Per task reaped: its queue and new state (pending after backoff, dead, or cancelled). */
  reaped: Array<{ id: string; queue: string; state: TaskState; run_at: number }>;
  /** The ids among `reaped` whose unclaimed provisional lease was handed back (attempt refunded): no
   * attempt failed, so their event is "released" (or "cancelled"), not "failed". */
  unclaimed: string[];
}

/**
 * Tidies processing tasks whose lease ran out, at most `limit` of each kind per call:
 * - a provisional lease nobody claimed (src/engine/redelivery.ts) goes back to pending, due at once, with
 *   its attempt refunded and nothing recorded — the client it was handed to had gone;
 * - an expired lease returns to pending after the queue's capped backoff (counted from the expiry), or
 *   becomes dead when attempts are exhausted (cancelled when a cancel was requested), with "lease
 *   expired" recorded in the task's error history.
 * A lease takes an expired task over by itself once its backoff is due, so the reaper is not what makes
 * work flow again; it makes the states true for listings and stats, and buries the exhausted.
 *
 * Idempotent and safe when two runs overlap: each UPDATE re-checks state and expiry, and D1 runs one
 * statement at a time, so a task is reaped once.
 *
 * @example
 * const { reaped } = await reapExpiredLeases(db, Date.now());
 */
export async function reapExpiredLeases(db: Db, now: number, limit = MAX_ROWS_PER_TICK_STATEMENT): Promise<ReapResult> {
  type Ended = ReapResult["reaped"][number] & { type: string; started_at: number | null };
  const refunded = await db.all<Ended>(sql`UPDATE tasks SET
      state = CASE WHEN cancel_requested = 1 THEN 'cancelled' ELSE 'pending' END,
      finished_at = CASE WHEN cancel_requested = 1 THEN ${now} ELSE NULL END,
      attempts = max(attempts - 1, 0),
      lease_token = NULL,
      lease_expires_at = NULL,
      claim_by = NULL,
      updated_at = ${now}
    WHERE id IN (
      SELECT id FROM tasks WHERE finished_at IS NULL AND ${unclaimedSql(now)} LIMIT ${limit}
    ) AND ${unclaimedSql(now)}
    RETURNING id, queue, state, run_at, type, started_at`);
  const expired = await db.all<Ended>(sql`UPDATE tasks SET
      ${failureSetSql({
        permanent: sql`0`,
        from: sql`tasks.lease_expires_at`,
        retryAfterMs: expiryBackoffMsSql(),
        message: sql`'lease expired'`,
        kind: sql`'lease_expired'`,
        at: sql`tasks.lease_expires_at`,
        now,
      })}
    WHERE id IN (
      SELECT id FROM tasks WHERE finished_at IS NULL AND ${expiredClaimedSql(now)} LIMIT ${limit}
    ) AND ${expiredClaimedSql(now)}
    RETURNING id, queue, state, run_at, type, started_at`);
  await recordCounters(
    db,
    [...refunded.flatMap((t) => outcomeEvents(t, now, false)), ...expired.flatMap((t) => outcomeEvents(t, now, true))],
    now,
  );
  return {
    reaped: [...refunded, ...expired].map(({ id, queue, state, run_at }) => ({ id, queue, state, run_at })),
    unclaimed: refunded.map((t) => t.id),
  };
}
