import { sql } from "drizzle-orm";
import { encodeTime } from "ulid";
import type { Db } from "../db/client";
import { MAX_ROWS_PER_TICK_STATEMENT } from "../contracts/limits";
import { DEFAULT_QUEUE_CONFIG } from "./queue-config";

/**
 * The smallest ULID of millisecond `ms`. Ids are ULIDs, time-ordered, and a task finishes after it is
 * created, so every task finished before `ms` has an id below this bound: purges walk the primary key up
 * to it instead of paying for an index on finished_at with every task.
 */
export function idLowerBound(ms: number): string {
  return encodeTime(Math.max(0, ms), 10) + "0".repeat(16);
}

/**
 * Deletes finished (completed, dead, cancelled) tasks of a queue that finished before `before`.
 * At most `limit` per call.
 *
 * @example
 * const { purged } = await purgeTasks(db, "emails", { before: Date.now() - 86_400_000 });
 */
export async function purgeTasks(
  db: Db,
  queue: string,
  options: { before: number; states?: Array<"completed" | "dead" | "cancelled">; limit?: number },
): Promise<{ purged: number }> {
  const states = JSON.stringify(options.states ?? ["completed", "dead", "cancelled"]);
  const limit = Math.min(options.limit ?? MAX_ROWS_PER_TICK_STATEMENT, MAX_ROWS_PER_TICK_STATEMENT);
  const rows = await db.all<{ id: string }>(sql`DELETE FROM tasks WHERE id IN (
      SELECT id FROM tasks
      WHERE id < ${idLowerBound(options.before)} AND queue = ${queue}
        AND finished_at IS NOT NULL AND finished_at < ${options.before}
        AND state IN (SELECT value FROM json_each(${states}))
      LIMIT ${limit}
    ) RETURNING id`);
  return { purged: rows.length };
}

/**
 * Deletes finished tasks past their queue's retention (cron). Reads only rows created before the longest
 * possible cutoff (the shortest retention in use), never the recent bulk of the table.
 *
 * @example
 * const { pruned } = await pruneByRetention(db, Date.now());
 */
export async function pruneByRetention(
  db: Db,
  now: number,
  limit = MAX_ROWS_PER_TICK_STATEMENT,
): Promise<{ pruned: number }> {
  const shortest = await db.get<{ s: number | null }>(sql`SELECT min(retention_s) AS s FROM queues`);
  const minRetentionS = Math.min(shortest?.s ?? Infinity, DEFAULT_QUEUE_CONFIG.retention_s);
  const rows = await db.all<{ id: string }>(sql`DELETE FROM tasks WHERE id IN (
      SELECT id FROM tasks
      WHERE id < ${idLowerBound(now - minRetentionS * 1000)} AND finished_at IS NOT NULL
        AND finished_at < ${now} - 1000 * coalesce(
          (SELECT q.retention_s FROM queues q WHERE q.name = tasks.queue), ${DEFAULT_QUEUE_CONFIG.retention_s})
      LIMIT ${limit}
    ) RETURNING id`);
  return { pruned: rows.length };
}
