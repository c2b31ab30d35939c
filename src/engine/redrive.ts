import { eq, sql, type SQL } from "drizzle-orm";
import type { Db } from "../db/client";
import { tasks } from "../db/schema";
import { EdgeqError, NotFoundError } from "../contracts/errors";
import { MAX_ROWS_PER_TICK_STATEMENT } from "../contracts/limits";
import type { StoredTask } from "../contracts/stored-task";
import { rowFromRaw } from "./task-row";
import { REVIVABLE_STATES } from "../contracts/states";

/** The revivable states as an SQL list (constants, no bound parameter). */
const REVIVABLE_SQL = sql.raw(`(${REVIVABLE_STATES.map((s) => `'${s}'`).join(", ")})`);

/** The SET clause that revives a dead, cancelled or expired task: pending now, attempts reset, error history
 * kept, its start deadline dropped (an expired task's is past: kept, it could never start). */
export function reviveSetSql(now: number): SQL {
  return sql`state = 'pending', attempts = 0, run_at = ${now}, finished_at = NULL, cancel_requested = 0,
    result = NULL, progress = NULL, progress_message = NULL, lease_holder = NULL, start_by = NULL,
    updated_at = ${now}`;
}

function isUniqueViolation(error: unknown): boolean {
  return error instanceof Error && /UNIQUE constraint failed/i.test(`${error.message} ${String(error.cause ?? "")}`);
}

/**
 * Retries one dead or cancelled task: back to pending now with attempts reset (the error history is
 * kept). Fails with `dedupe_conflict` when a live task of the queue already holds its dedupe key.
 *
 * @example
 * const task = await retryTask(db, id, Date.now());
 */
export async function retryTask(db: Db, id: string, now: number): Promise<StoredTask> {
  let raw: Record<string, unknown> | undefined;
  try {
    raw = await db.get<Record<string, unknown>>(
      sql`UPDATE tasks SET ${reviveSetSql(now)} WHERE id = ${id} AND state IN ${REVIVABLE_SQL} RETURNING *`,
    );
  } catch (error) {
    if (!isUniqueViolation(error)) throw error;
    throw new EdgeqError("dedupe_conflict", `task ${id}: a live task of its queue already holds its dedupe key`);
  }
  if (raw) return rowFromRaw(raw);
  const existing = await db.select({ state: tasks.state }).from(tasks).where(eq(tasks.id, id)).get();
  if (!existing) throw new NotFoundError(`task ${id}`);
  throw new EdgeqError(
    "invalid_transition",
    `task ${id} is ${existing.state}; only ${REVIVABLE_STATES.join(", ")} tasks can be retried`,
  );
}

export interface RedriveScope {
  /** Which finished state to revive (dead, cancelled or expired); default dead. */
  state?: (typeof REVIVABLE_STATES)[number];
  group?: string;
  /** At most this many tasks (default and maximum MAX_ROWS_PER_TICK_STATEMENT); call again for more. */
  limit?: number;
}

/**
 * Redrives the dead (or cancelled) tasks of a queue, optionally of one group, back to pending with
 * attempts reset. A task whose dedupe key is held by a live task is skipped, so one conflict does not block
 * the rest: it is not picked (so it cannot use up `limit` call after call), and `UPDATE OR IGNORE` skips one
 * that conflicts with another task revived by the same statement.
 *
 * @example
 * const { redriven } = await redriveQueue(db, "renders", { group: "album-7" }, Date.now());
 */
export async function redriveQueue(
  db: Db,
  queue: string,
  scope: RedriveScope,
  now: number,
): Promise<{ redriven: number; ids: string[] }> {
  const state = scope.state ?? "dead";
  const limit = Math.min(scope.limit ?? MAX_ROWS_PER_TICK_STATEMENT, MAX_ROWS_PER_TICK_STATEMENT);
  const groupFilter = scope.group === undefined ? sql`` : sql`AND group_key = ${scope.group}`;
  const rows = await db.all<{ id: string }>(sql`UPDATE OR IGNORE tasks SET ${reviveSetSql(now)}
    WHERE id IN (
      SELECT id FROM tasks WHERE queue = ${queue} AND state = ${state} ${groupFilter}
        AND NOT EXISTS (SELECT 1 FROM tasks live
          WHERE live.queue = tasks.queue AND live.dedupe_key = tasks.dedupe_key AND live.finished_at IS NULL)
      ORDER BY id LIMIT ${limit}
    )
    RETURNING id`);
  return { redriven: rows.length, ids: rows.map((r) => r.id) };
}
