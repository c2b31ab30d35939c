import { sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { ackedWithSql, applyFencedUpdate, leaseFenceSql, type AckOutcome, type AckScope, type FencedItem } from "./ack";
import { flowSlotReturningSql } from "./flow-control";
import { EdgeqError } from "../contracts/errors";
import { jsonValueProblem } from "../contracts/json-value";
import { MAX_ERROR_MESSAGE_CHARS } from "../contracts/limits";
import { failureSetSql } from "./retry-policy";
import { settledDependentsSql } from "./dependencies";

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
  // Checked per item, before SQL: a bad message fails its own item only.
  const problems = items.map((i) => {
    const problem = jsonValueProblem(i.message, "error");
    return problem ? new EdgeqError("invalid_request", `task ${i.id}: ${problem}`) : null;
  });
  const valid = items.filter((_, k) => problems[k] === null);
  const applied = valid.length
    ? await applyFencedUpdate(
        db,
        valid.map((i) => ({
          id: i.id,
          leaseToken: i.leaseToken,
          message: truncateMessage(i.message),
          permanent: i.retryable === false ? 1 : 0,
          retry_after_ms: i.retryAfterS == null ? null : Math.round(i.retryAfterS * 1000),
        })),
        (json, fences) => ({
          update: sql`UPDATE tasks SET ${failureSetSql({
            permanent: sql`(j.value->>'permanent') = 1`,
            from: sql`${now}`,
            retryAfterMs: sql`j.value->>'retry_after_ms'`,
            message: sql`j.value->>'message'`,
            kind: sql`CASE WHEN (j.value->>'permanent') = 1 THEN 'permanent' ELSE 'error' END`,
            at: sql`${now}`,
            now,
          })},
            acked_with = ${ackedWithSql("fail", sql`j.value->>'lease_token'`)}
          FROM json_each(${json}) AS j
          WHERE ${leaseFenceSql(sql`j.value->>'id'`, sql`j.value->>'lease_token'`, now, scope)}
          RETURNING tasks.id, tasks.queue, tasks.state, tasks.run_at, tasks.type, tasks.started_at, ${flowSlotReturningSql()}`,
          count: { now, attempt: true },
          dependents: settledDependentsSql(fences(), now),
        }),
        scope,
        "fail",
      )
    : [];
  let next = 0;
  return items.map((item, k): AckOutcome => {
    const problem = problems[k];
    return problem ? { id: item.id, ok: false, error: problem } : applied[next++]!;
  });
}

/** The first MAX_ERROR_MESSAGE_CHARS characters, never cutting a surrogate pair in half (which would store
 * a lone surrogate, i.e. U+FFFD). */
export function truncateMessage(message: string): string {
  if (message.length <= MAX_ERROR_MESSAGE_CHARS) return message;
  const cut = message.slice(0, MAX_ERROR_MESSAGE_CHARS);
  return cut.isWellFormed() ? cut : cut.slice(0, -1);
}
