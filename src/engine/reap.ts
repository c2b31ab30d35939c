import { sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { outcomeEvents, recordCounters } from "./counters";
import { MAX_ROWS_PER_TICK_STATEMENT } from "../contracts/limits";
import { readLiveFront } from "./live-front";
import { expiredClaimedSql, unclaimedExpiredSql } from "./redelivery";
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
 * Tidies processing tasks whose lease ran out, found by the walk of the live index's front
 * (src/engine/live-front.ts), at most `limit` per call:
 * - a provisional lease nobody claimed (src/engine/redelivery.ts) goes back to pending, due at once, with
 *   its attempt refunded and nothing recorded — the client it was handed to had gone — once the lease has
 *   expired too: before that it is its holder's until another lease takes it over (a slow live client may
 *   still claim or ack it), and a lease takes it over without the reaper's help;
 * - an expired lease returns to pending after the queue's capped backoff (counted from the expiry), or
 *   becomes dead when attempts are exhausted (cancelled when a cancel was requested), with "lease
 *   expired" recorded in the task's error history.
 * A lease takes an expired task over by itself once its backoff is due, so the reaper is not what makes
 * work flow again; it makes the states true for listings and stats, and buries the exhausted.
 *
 * Idempotent and safe when two runs overlap: see `reapLapsedLeases`.
 *
 * @example
 * const { reaped } = await reapExpiredLeases(db, Date.now());
 */
export async function reapExpiredLeases(db: Db, now: number, limit = MAX_ROWS_PER_TICK_STATEMENT): Promise<ReapResult> {
  const lapsed = (await readLiveFront(db, now)).flatMap((front) => front.lapsed.map((task) => task.id));
  return reapLapsedLeases(db, lapsed.slice(0, limit), now);
}

/**
 * Reaps those of `ids` whose lease has lapsed at `now` (as `reapExpiredLeases` describes), reading nothing
 * but those tasks: two UPDATEs by primary key, each re-checking its lapse in its WHERE clause, so a task
 * taken over, acked or reaped since it was found is left alone. Idempotent and safe when two runs overlap:
 * D1 runs one statement at a time, so a task is reaped once. At most MAX_ROWS_PER_TICK_STATEMENT ids.
 *
 * @example
 * const { reaped } = await reapLapsedLeases(db, lapsedIds, Date.now());
 */
export async function reapLapsedLeases(db: Db, ids: string[], now: number): Promise<ReapResult> {
  if (ids.length === 0) return { reaped: [], unclaimed: [] };
  if (ids.length > MAX_ROWS_PER_TICK_STATEMENT) {
    throw new Error(`reapLapsedLeases: at most ${MAX_ROWS_PER_TICK_STATEMENT} ids per call (got ${ids.length})`);
  }
  const among = sql`id IN (SELECT value FROM json_each(${JSON.stringify(ids)}))`;
  type Ended = ReapResult["reaped"][number] & { type: string; started_at: number | null };
  const refunded = await db.all<Ended>(sql`UPDATE tasks SET
      state = CASE WHEN cancel_requested = 1 THEN 'cancelled' ELSE 'pending' END,
      finished_at = CASE WHEN cancel_requested = 1 THEN ${now} ELSE NULL END,
      attempts = max(attempts - 1, 0),
      lease_token = NULL,
      lease_expires_at = NULL,
      claim_by = NULL,
      updated_at = ${now}
    WHERE ${among} AND ${unclaimedExpiredSql(now)}
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
    WHERE ${among} AND ${expiredClaimedSql(now)}
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
