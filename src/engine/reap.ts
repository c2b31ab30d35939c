import { sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { MAX_ROWS_PER_TICK_STATEMENT } from "./limits";
import { failureSetSql } from "./retry-policy";
import type { TaskState } from "./states";

export interface ReapResult {
  /** Per task reaped: its queue and new state (pending after backoff, dead, or cancelled). */
  reaped: Array<{ id: string; queue: string; state: TaskState; run_at: number }>;
}

/**
 * Returns processing tasks whose lease expired to pending after the queue's capped backoff (counted from
 * the expiry), or makes them dead when attempts are exhausted; records "lease expired" in each task's
 * error history. At most `limit` tasks per call.
 *
 * Idempotent and safe when two runs overlap: the UPDATE re-checks state and expiry, and D1 runs one
 * statement at a time, so a task is reaped once.
 *
 * @example
 * const { reaped } = await reapExpiredLeases(db, Date.now());
 */
export async function reapExpiredLeases(db: Db, now: number, limit = MAX_ROWS_PER_TICK_STATEMENT): Promise<ReapResult> {
  const reaped = await db.all<{ id: string; queue: string; state: TaskState; run_at: number }>(sql`UPDATE tasks SET
      ${failureSetSql({
        permanent: sql`0`,
        from: sql`tasks.lease_expires_at`,
        retryAfterMs: sql`NULL`,
        message: sql`'lease expired'`,
        kind: sql`'lease_expired'`,
        at: sql`tasks.lease_expires_at`,
        now,
      })}
    WHERE id IN (
      SELECT id FROM tasks
      WHERE finished_at IS NULL AND state = 'processing' AND lease_expires_at <= ${now}
      LIMIT ${limit}
    ) AND state = 'processing' AND lease_expires_at <= ${now}
    RETURNING id, queue, state, run_at`);
  return { reaped };
}
