import { sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { MAX_ROWS_PER_TICK_STATEMENT } from "../contracts/limits";
import { recordCounters } from "./counters";

/** A task the expiry pass ended, as its events and counters need it. */
export interface ExpiredTask {
  id: string;
  queue: string;
  type: string;
}

/**
 * Ends as `expired` the tasks of this database that were not started by their start deadline (`start_by <=
 * now`): at most `limit` (and MAX_ROWS_PER_TICK_STATEMENT) per call, earliest deadline first, in one statement,
 * each counted in the `expired` counter. Only a task that never started and is still live (pending, or waiting
 * on dependencies) is expired; one a lease took before its deadline started and is not, and no lease takes a
 * task at or after its deadline (src/engine/redelivery.ts) — so expiring and leasing never both happen to a
 * task, whichever statement D1 runs first.
 *
 * Reads in proportion to what is due: the pick walks the `tasks_start_by` index, which holds only tasks with a
 * deadline that have not started (a first lease takes a task out of it).
 *
 * Idempotent: a second pass finds nothing more to do; two passes overlapping expire each task once (the UPDATE
 * re-checks the state).
 *
 * @example
 * const expired = await expireOverdueTasks(db, Date.now());
 */
export async function expireOverdueTasks(
  db: Db,
  now: number,
  limit: number = MAX_ROWS_PER_TICK_STATEMENT,
): Promise<ExpiredTask[]> {
  const n = Math.max(0, Math.min(limit, MAX_ROWS_PER_TICK_STATEMENT));
  if (n === 0) return [];
  const overdue = sql`start_by IS NOT NULL AND started_at IS NULL AND finished_at IS NULL AND start_by <= ${now}`;
  const expired = await db.all<ExpiredTask>(sql`UPDATE tasks
    SET state = 'expired', finished_at = ${now}, updated_at = ${now}
    WHERE id IN (SELECT id FROM tasks INDEXED BY tasks_start_by WHERE ${overdue} ORDER BY start_by LIMIT ${n})
      AND state IN ('pending', 'waiting') AND ${overdue}
    RETURNING id, queue, type`);
  await recordCounters(
    db,
    expired.map((t) => ({ queue: t.queue, type: t.type, counter: "expired" as const })),
    now,
  );
  return expired;
}
