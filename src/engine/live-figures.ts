import { sql } from "drizzle-orm";
import type { Db } from "../db/client";

/** What a queue's live (pending and processing) tasks look like at `now`: the gauges of /metrics and the
 * inputs of health. */
export interface LiveFigures {
  queue: string;
  pending: number;
  processing: number;
  /** Pending tasks whose run_at has passed. */
  due: number;
  /** run_at of the oldest due pending task, or null. */
  oldest_due_at: number | null;
  /** Processing tasks whose lease ran out: their holder stopped heart-beating (not yet redelivered). */
  lease_expired: number;
  /** Processing tasks leased first longer ago than the queue's max_run_s (0 when it has none). */
  overrun: number;
}

/**
 * Live figures of every queue with live tasks (or of one), read through the `tasks_live` partial index:
 * proportional to live work, never to finished tasks. One statement.
 *
 * @example
 * const [figures] = await liveFigures(db, Date.now(), "emails");
 */
export async function liveFigures(db: Db, now: number, queue?: string): Promise<LiveFigures[]> {
  const only = queue === undefined ? sql`` : sql` AND t.queue = ${queue}`;
  return db.all<LiveFigures>(sql`SELECT t.queue AS queue,
      sum(t.state = 'pending') AS pending,
      sum(t.state = 'processing') AS processing,
      sum(t.state = 'pending' AND t.run_at <= ${now}) AS due,
      min(CASE WHEN t.state = 'pending' AND t.run_at <= ${now} THEN t.run_at END) AS oldest_due_at,
      sum(t.state = 'processing' AND t.lease_expires_at <= ${now}) AS lease_expired,
      sum(t.state = 'processing' AND q.max_run_s IS NOT NULL AND t.started_at <= ${now} - q.max_run_s * 1000)
        AS overrun
    FROM tasks t LEFT JOIN queues q ON q.name = t.queue
    WHERE t.finished_at IS NULL${only}
    GROUP BY t.queue ORDER BY t.queue`);
}

/** A queue's live tasks by whether they can be leased now. */
export interface LiveCounts {
  /** Pending and due. */
  due: number;
  /** Pending, not yet due. */
  notDue: number;
  processing: number;
}

/**
 * Counts of one queue's live tasks at `now`, read through the live index only (no join, one statement).
 *
 * @example
 * const { due, processing } = await countLiveTasks(db, "emails", Date.now());
 */
export async function countLiveTasks(db: Db, queue: string, now: number): Promise<LiveCounts> {
  const row = await db.get<{ due: number | null; not_due: number | null; processing: number | null }>(sql`SELECT
      sum(state = 'pending' AND run_at <= ${now}) AS due,
      sum(state = 'processing') AS processing,
      sum(state = 'pending' AND run_at > ${now}) AS not_due
    FROM tasks WHERE queue = ${queue} AND finished_at IS NULL`);
  return { due: row?.due ?? 0, notDue: row?.not_due ?? 0, processing: row?.processing ?? 0 };
}
