import { sql, type SQL } from "drizzle-orm";
import { batchAll, type Db } from "../db/client";
import {
  COUNTER_FOLD_CURSOR,
  countedInRowSql,
  EVENT_COUNTS,
  FOLD_CURSOR_SQL as CURSOR,
  minuteOf,
  rowEventsSql,
} from "./counters";
import { encodeTime } from "ulid";
import { TOMBSTONE_MARK, tombstoneRangeSql } from "./tombstone-mark";

/**
 * The per-minute counters off the per-call write path (issue 32). Counting a transition with its own upsert
 * costs a row written per call — 3 of the 8 rows a task wrote at batch 1. Instead, a task created after the
 * fold's cursor (a `sweep_cursors` row, one per database) keeps its counter events in its own row
 * (`tasks.uncounted`, a JSON array of `[counter, minute, ms]`), written by the very statement that makes the
 * transition — the row it writes anyway, so no row more, and never lost by a crash between two statements.
 * The cron tick folds them (`foldCountersInRows`): one batch adds the events of every task with an id in
 * (cursor, next] (and of their tombstones, src/engine/tombstone-mark.ts) to `task_counters` and moves the
 * cursor to `next` — a crash leaves both or neither, and two overlapping ticks fold a range once (the second
 * finds the cursor moved and changes nothing).
 *
 * Which tasks keep their events (`countedInRowSql`): those whose enqueue found an id above the cursor. Once the
 * cursor passes a task, every later transition of it is counted on its path as before (its statement sets
 * `uncounted` back to null, in the same row write). Both sides read the cursor inside the statement that
 * decides, so a transition is counted by exactly one of the two. A Worker whose `now` lags (an id below
 * the cursor) is simply counted on its path: the grace (COUNTER_FOLD_GRACE_MS) only makes that rare.
 *
 * A database where no fold ran has no cursor: every transition is counted on its path, as before.
 *
 * What is in the row: the enqueue, leases (with the first lease's wait, and an expired lease taken over as a
 * failed attempt) and the completion (with its run time, or cancelled). Every other transition (failures, the
 * reaper, cancels, expiry, bulk actions, `then` children) is counted on its path as before. A completion that
 * keeps nothing makes the row a tombstone that keeps its events for the fold, under its task's queue
 * (src/engine/complete-tombstone.ts); the retention prune, purge and a reuse leave a task until the fold
 * passed it (at most the grace and a tick).
 */

export { COUNTER_FOLD_CURSOR, countedInRowSql, rowEventsSql };

/** How far behind `now` the fold stops: 30 s. A task's events stay in its row at least this long, so the
 * transitions of a short task (most end within seconds) are all counted by the fold, none on its path; and a
 * Worker's `now` is taken when its request starts, so an enqueue that ran late (a long poll's 20 s is the
 * longest a request here waits) still finds its id above the cursor. Counts reach task_counters 30-90 s
 * after the fact (a tick a minute). */
export const COUNTER_FOLD_GRACE_MS = 30_000;

/** Most tasks one fold reads: 10,000, a few milliseconds of D1 (one primary-key range) — a database runs at
 * most ~3,800 tasks/s (docs/scale.md), 228,000 a minute, so the tick calls it again while a full window was
 * read (MAX_FOLD_ROUNDS). */
export const MAX_FOLD_TASKS = 10_000;

/** One counter event, `[counter, minute, ms]`, as a JSON array in SQL. */
export function counterEventSql(counter: SQL, now: number, ms: SQL = sql`NULL`): SQL {
  return sql`json_array(${counter}, ${minuteOf(now)}, ${ms})`;
}

/**
 * The tombstones (src/engine/tombstone-mark.ts) whose events the fold has added up, as a condition on `t`'s
 * id: those of tasks below its cursor — every one where no fold ran (none kept events then) — and, with
 * `below`, only of tasks below that id too. What a reuse may take and the prune may delete, as
 * `countedInRowSql` is for a task.
 */
export function foldedTombstonesSql(t: SQL, below?: string): SQL {
  const passed = sql`coalesce(${CURSOR}, ${TOMBSTONE_MARK})`;
  return tombstoneRangeSql(t, sql`''`, below === undefined ? passed : sql`min(${passed}, ${below})`);
}

/** An enqueue's `uncounted`: its event, when the id is above the cursor; else null (counted on its path). */
export function enqueueUncountedSql(id: SQL, now: number): SQL {
  return sql`CASE WHEN ${id} > ${CURSOR} THEN json_array(${counterEventSql(sql`'enqueued'`, now)}) END`;
}

/** A transition's new `uncounted` for task `t`: its events appended while they are kept in the row, else
 * null (the fold has passed it: counted on its path from now on). */
export function appendUncountedSql(t: SQL, events: SQL[]): SQL {
  const pairs = sql.join(
    events.map((e) => sql`'$[#]', ${e}`),
    sql`, `,
  );
  return sql`CASE WHEN ${countedInRowSql(t)} THEN json_insert(${t}.uncounted, ${pairs}) END`;
}

/**
 * The counters upsert of counter events: `events` is a SELECT of rows (queue, type, c, minute, ms) — a
 * counter, the minute it happened in and its milliseconds — added to each (queue, type, minute)'s row. No
 * event: nothing is written.
 */
export function eventsUpsertSql(events: SQL): SQL {
  return sql`WITH s AS MATERIALIZED (SELECT *, ${EVENT_COUNTS.buckets} FROM (${events}))
    INSERT INTO task_counters (queue, type, minute, ${EVENT_COUNTS.columns})
    SELECT s.queue, s.type, s.minute, ${EVENT_COUNTS.amounts}
    FROM s
    WHERE true
    GROUP BY s.queue, s.type, s.minute
    ON CONFLICT (queue, type, minute) DO UPDATE SET ${EVENT_COUNTS.updates}`;
}

/**
 * Folds the counter events kept in task rows into task_counters, up to MAX_FOLD_TASKS tasks and as many
 * tombstones from the cursor, never past `now - COUNTER_FOLD_GRACE_MS`: the events of every task with an id
 * in (cursor, next], and of those tasks' tombstones, are added and the cursor moved to `next`, in one batch
 * (one transaction). A database without a cursor gets one at
 * that horizon, and nothing to fold (every task before it was counted on its path). Idempotent; safe when
 * two ticks overlap (the batch applies only from the cursor it read). Returns how many rows (tasks and
 * tombstones) it folded past and whether it stopped short of the horizon (call again).
 *
 * @example
 * while ((await foldCountersInRows(db, now)).more);
 */
export async function foldCountersInRows(db: Db, now: number): Promise<{ tasks: number; more: boolean }> {
  // The smallest id of that millisecond (ids are time-ordered ULIDs).
  const horizon = encodeTime(Math.max(0, now - COUNTER_FOLD_GRACE_MS), 10) + "0".repeat(16);
  const at = await db.get<{ position: string | null }>(sql`SELECT ${CURSOR} AS position`);
  const from = at?.position ?? null;
  if (from === null) {
    await db.run(sql`INSERT INTO sweep_cursors (name, position) VALUES (${COUNTER_FOLD_CURSOR}, ${horizon})
      ON CONFLICT (name) DO NOTHING`);
    return { tasks: 0, more: false };
  }
  if (from >= horizon) return { tasks: 0, more: false };
  // The range's tasks, and the tombstones of its tasks (src/engine/tombstone-mark.ts: they keep their events
  // too, above every task in the key), each MAX_FOLD_TASKS at most: the range ends where either is full.
  const window = (range: SQL) => sql`(SELECT count(*) AS n, max(id) AS last
    FROM (SELECT id FROM tasks WHERE ${range} ORDER BY id LIMIT ${MAX_FOLD_TASKS}))`;
  const seen = await db.get<{ n: number; last: string | null; tn: number; tlast: string | null }>(sql`SELECT
      w.n AS n, w.last AS last, t.n AS tn, t.last AS tlast
    FROM ${window(sql`id > ${from} AND id < ${horizon}`)} AS w,
      ${window(tombstoneRangeSql(sql`tasks`, sql`${from}`, sql`${horizon}`))} AS t`);
  const ends = [horizon];
  if ((seen?.n ?? 0) >= MAX_FOLD_TASKS) ends.push(seen!.last!);
  if ((seen?.tn ?? 0) >= MAX_FOLD_TASKS) ends.push(seen!.tlast!.slice(TOMBSTONE_MARK.length));
  const next = ends.reduce((a, b) => (b < a ? b : a));
  const more = next !== horizon;
  const tombstones = rowEventsSql(
    sql`${tombstoneRangeSql(sql`t`, sql`${from}`, sql`${next}`)} AND ${CURSOR} = ${from}`,
  );
  await batchAll(db, [
    eventsUpsertSql(
      sql`${rowEventsSql(sql`t.id > ${from} AND t.id <= ${next} AND ${CURSOR} = ${from}`)} UNION ALL ${tombstones}`,
    ),
    sql`UPDATE sweep_cursors SET position = ${next} WHERE name = ${COUNTER_FOLD_CURSOR} AND position = ${from}`,
  ]);
  return { tasks: (seen?.n ?? 0) + (seen?.tn ?? 0), more };
}
