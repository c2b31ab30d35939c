import { sql } from "drizzle-orm";
import type { Db } from "../db/client";
import type { TaskRow } from "../db/schema";
import { EdgeqError } from "./errors";
import { MAX_BATCH } from "./limits";
import { rowFromRaw } from "./task-row";

export interface LeaseRequest {
  queue: string;
  /** 1..MAX_BATCH tasks. */
  max: number;
  visibilityTimeoutS: number;
  /** Who holds the lease (for inspection). */
  holder: string | null;
}

/**
 * Leases up to `max` due pending tasks of a queue in one statement: a CTE picks them in priority order
 * (higher first), then run_at, then id, and the UPDATE marks them processing, counts the attempt, and
 * gives each a fresh random lease token and an expiry `now + visibility timeout`.
 *
 * Why it is safe under concurrency: D1 runs one statement at a time per database, and the UPDATE
 * re-checks `state = 'pending'`, so two leasers can never both take a task.
 * Why it is cheap: the pick walks the `tasks_live` index (queue, priority DESC, run_at, id), so it reads
 * live tasks only, never finished ones; the update writes one row per task (no indexed column changes).
 *
 * @example
 * const leased = await leaseTasks(db, { queue: "emails", max: 10, visibilityTimeoutS: 30, holder: "w1" }, Date.now());
 */
export async function leaseTasks(db: Db, request: LeaseRequest, now: number): Promise<TaskRow[]> {
  if (!Number.isInteger(request.max) || request.max < 1 || request.max > MAX_BATCH) {
    // SQLite reads LIMIT -1 as "no limit": never let a bad max through to SQL.
    throw new EdgeqError("invalid_request", `max must be an integer from 1 to ${MAX_BATCH} (got ${request.max})`);
  }
  const expiresAt = now + request.visibilityTimeoutS * 1000;
  const raw = await db.all<Record<string, unknown>>(sql`WITH picked AS (
      SELECT id FROM tasks
      WHERE queue = ${request.queue} AND finished_at IS NULL AND state = 'pending' AND run_at <= ${now}
      ORDER BY priority DESC, run_at, id
      LIMIT ${request.max}
    )
    UPDATE tasks SET
      state = 'processing',
      attempts = attempts + 1,
      lease_token = lower(hex(randomblob(16))),
      lease_holder = ${request.holder},
      lease_expires_at = ${expiresAt},
      started_at = coalesce(started_at, ${now}),
      updated_at = ${now}
    WHERE id IN (SELECT id FROM picked) AND state = 'pending'
    RETURNING *`);
  // RETURNING order is unspecified in SQLite: restore the lease order.
  return raw.map(rowFromRaw).sort(leaseOrder);
}

/** Priority descending, then run_at, then id — the order tasks are leased in. */
export function leaseOrder(a: TaskRow, b: TaskRow): number {
  return b.priority - a.priority || a.runAt - b.runAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

/**
 * The earliest run_at after `now` among the queue's pending tasks, or null: when the coordinator's
 * alarm should next fire.
 */
export async function nextRunAt(db: Db, queue: string, now: number): Promise<number | null> {
  const row = await db.get<{ next: number | null }>(sql`SELECT min(run_at) AS next FROM tasks
    WHERE queue = ${queue} AND finished_at IS NULL AND state = 'pending' AND run_at > ${now}`);
  return row?.next ?? null;
}
