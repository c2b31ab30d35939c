import { sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { applyFencedUpdate, leaseFenceSql, type AckOutcome, type AckScope, type FencedItem } from "./ack";
import { MAX_ERROR_MESSAGE_CHARS } from "./limits";
import { failureSetSql } from "./retry-policy";

export interface FailItem extends FencedItem {
  message: string;
  /** false: a permanent failure, the task goes dead at once. Default true. */
  retryable?: boolean;
  /** Retry no sooner than this (overrides the backoff), e.g. from a provider's Retry-After. */
  retryAfterS?: number;
}

/**
 * Fails up to MAX_BATCH processing tasks in one fenced statement. A retryable failure with attempts left
 * returns the task to pending after `retryAfterS` or the queue's capped exponential backoff; a permanent
 * failure or the last attempt makes it dead. Every failure is appended to the task's error history.
 *
 * @example
 * await failTasks(db, [{ id, leaseToken, message: "upstream 503", retryAfterS: 30 }], Date.now());
 */
export async function failTasks(db: Db, items: FailItem[], now: number, scope: AckScope = {}): Promise<AckOutcome[]> {
  return applyFencedUpdate(
    db,
    items.map((i) => ({
      id: i.id,
      leaseToken: i.leaseToken,
      message: i.message.slice(0, MAX_ERROR_MESSAGE_CHARS),
      permanent: i.retryable === false ? 1 : 0,
      retry_after_ms: i.retryAfterS == null ? null : Math.round(i.retryAfterS * 1000),
    })),
    (json) => ({
      update: sql`UPDATE tasks SET ${failureSetSql({
        permanent: sql`(j.value->>'permanent') = 1`,
        from: sql`${now}`,
        retryAfterMs: sql`j.value->>'retry_after_ms'`,
        message: sql`j.value->>'message'`,
        kind: sql`CASE WHEN (j.value->>'permanent') = 1 THEN 'permanent' ELSE 'error' END`,
        at: sql`${now}`,
        now,
      })}
      FROM json_each(${json}) AS j
      WHERE ${leaseFenceSql(sql`j.value->>'id'`, sql`j.value->>'lease_token'`, now, scope)}
      RETURNING tasks.id, tasks.queue, tasks.state, tasks.run_at`,
    }),
    scope,
  );
}
