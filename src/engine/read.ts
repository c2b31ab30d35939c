import { and, asc, eq, gt, isNull, sql } from "drizzle-orm";
import { batchAll, type Db } from "../db/client";
import { tasks } from "../db/schema";
import { NotFoundError } from "../contracts/errors";
import { TASK_STATES, type TaskState } from "../contracts/states";
import type { StoredTask } from "../contracts/stored-task";
import { storedTask } from "./task-row";
import { isTombstoneSql } from "./tombstone-mark";

/** One task by id. */
export async function getTask(db: Db, id: string): Promise<StoredTask> {
  const row = await db.select().from(tasks).where(eq(tasks.id, id)).get();
  if (!row) throw new NotFoundError(`task ${id}`);
  return storedTask(row);
}

/**
 * A task's state, or null when `db` has no such task (reads one row's state, not its payload).
 *
 * @example
 * const state = await findTaskState(db, id);
 */
export async function findTaskState(db: Db, id: string): Promise<TaskState | null> {
  return (await db.get<{ state: TaskState }>(sql`SELECT state FROM tasks WHERE id = ${id}`))?.state ?? null;
}

/** The columns a task event shows of its task (src/events). */
export interface TaskEventFields {
  id: string;
  type: string;
  group_key: string | null;
  state: TaskState;
  attempts: number;
  run_at: number;
  errors: string;
  progress: number | null;
  progress_message: string | null;
}

/**
 * What events show of these tasks, as they are now; ids `db` does not hold are left out (one read).
 *
 * @example
 * const rows = await readTaskEventFields(db, [id]);
 */
export async function readTaskEventFields(db: Db, ids: string[]): Promise<TaskEventFields[]> {
  return db.all<TaskEventFields>(sql`SELECT id, type, group_key, state, attempts, run_at, errors, progress,
    progress_message FROM tasks WHERE id IN (SELECT value FROM json_each(${JSON.stringify(ids)}))`);
}

export interface ListFilter {
  state?: TaskState;
  group?: string;
  type?: string;
  /** Exact dedupe key (the list route's query parameter, hence its spelling). */
  dedupe_key?: string;
  limit: number;
  /** The last id of the previous page. */
  cursor?: string;
}

/** A page of a listing, and the cursor of the next page (null at the end). */
export interface TaskPage {
  tasks: StoredTask[];
  next_cursor: string | null;
}

/**
 * A page of a queue's tasks in id (creation) order, with the cursor of the next page (null at the end).
 *
 * @example
 * const { tasks, next_cursor } = await listTasks(db, "emails", { state: "dead", limit: 50 });
 */
export async function listTasks(db: Db, queue: string, filter: ListFilter): Promise<TaskPage> {
  const rows = await db
    .select()
    .from(tasks)
    .where(
      and(
        eq(tasks.queue, queue),
        filter.state === undefined ? undefined : eq(tasks.state, filter.state),
        filter.group === undefined ? undefined : eq(tasks.groupKey, filter.group),
        filter.type === undefined ? undefined : eq(tasks.type, filter.type),
        filter.dedupe_key === undefined ? undefined : eq(tasks.dedupeKey, filter.dedupe_key),
        // Live tasks (pending, processing) have no finished_at: saying so lets a dedupe-key search use the
        // live-dedupe index (tasks_live_dedupe) instead of reading the queue's rows.
        filter.dedupe_key !== undefined && (filter.state === "pending" || filter.state === "processing")
          ? isNull(tasks.finishedAt)
          : undefined,
        filter.cursor === undefined ? undefined : gt(tasks.id, filter.cursor),
      ),
    )
    .orderBy(asc(tasks.id))
    .limit(filter.limit + 1);
  const page = rows.slice(0, filter.limit).map(storedTask);
  const last = page.at(-1);
  return { tasks: page, next_cursor: rows.length > filter.limit && last ? last.id : null };
}

export type StateCounts = Record<TaskState, number>;

function emptyCounts(): StateCounts {
  return Object.fromEntries(TASK_STATES.map((s) => [s, 0])) as StateCounts;
}

export interface QueueStats {
  queue: string;
  counts: StateCounts;
  /** Pending tasks whose run_at has passed (ready to lease now). */
  due: number;
  /** run_at of the oldest due pending task: how far behind the workers are. */
  oldest_due_at: number | null;
}

/**
 * Counts per state for a queue (optionally one group), plus how much pending work is due now.
 *
 * @example
 * const stats = await queueStats(db, "emails", {}, Date.now());
 */
export async function queueStats(db: Db, queue: string, scope: { group?: string }, now: number): Promise<QueueStats> {
  const groupFilter = scope.group === undefined ? sql`` : sql`AND group_key = ${scope.group}`;
  const [byState = [], due = []] = await batchAll(db, [
    sql`SELECT state, count(*) AS n FROM tasks WHERE queue = ${queue} ${groupFilter} GROUP BY state`,
    sql`SELECT count(*) AS n, min(run_at) AS oldest FROM tasks
      WHERE queue = ${queue} AND finished_at IS NULL AND state = 'pending' AND run_at <= ${now} ${groupFilter}`,
  ]);
  const counts = emptyCounts();
  for (const r of byState as Array<{ state: TaskState; n: number }>) counts[r.state] = r.n;
  const [dueRow] = due as Array<{ n: number; oldest: number | null }>;
  return { queue, counts, due: dueRow?.n ?? 0, oldest_due_at: dueRow?.oldest ?? null };
}

/**
 * Every queue that has tasks or a stored config, with its counts per state.
 *
 * @example
 * const all = await listQueues(db);
 */
export async function listQueues(db: Db): Promise<Array<{ queue: string; counts: StateCounts }>> {
  const [rows = [], configured = []] = await batchAll(db, [
    // Tombstones (src/engine/tombstone-mark.ts) are no queue's tasks.
    sql`SELECT queue, state, count(*) AS n FROM tasks WHERE NOT ${isTombstoneSql(sql`tasks`)} GROUP BY queue, state`,
    sql`SELECT name FROM queues`,
  ]);
  const byQueue = new Map<string, StateCounts>();
  for (const { name } of configured as Array<{ name: string }>) byQueue.set(name, emptyCounts());
  for (const r of rows as Array<{ queue: string; state: TaskState; n: number }>) {
    const counts = byQueue.get(r.queue) ?? emptyCounts();
    counts[r.state] = r.n;
    byQueue.set(r.queue, counts);
  }
  return [...byQueue.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([queue, counts]) => ({ queue, counts }));
}
