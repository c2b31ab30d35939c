import { sql, type SQL } from "drizzle-orm";
import { PLAIN_SHAPE, taskColumnsSql, type InsertRow } from "./enqueue-rows";
import { pastRetentionSql, PRUNE_CURSOR } from "./purge";
import { foldedTombstonesSql } from "./counters-in-row";
import { DEFAULT_QUEUE_CONFIG } from "./queue-config";

/**
 * An enqueue of one plain task reuses a row the retention prune would delete (issue 32): instead of an
 * insert, one UPDATE turns a task finished past its queue's retention into the new task — its id, every
 * column — in the statement that would have inserted it.
 *
 * Why: D1 bills every row a statement writes, and a row's life was 5 of them — its insert and its live-index
 * entry (2), the lease (1), the completion (1) and the prune's delete (1). Moving a finished row to a new id
 * writes what the insert writes (the row, and the live-index entry it enters again: 2; a finished row is in
 * no index, and index deletions are not billed: test/engine/d1/partial-index-billing.test.ts), and the delete
 * never comes: a queue that keeps enqueueing writes 4 rows a task, not 5. Where there is no such row the
 * insert runs as before, in the same batch (its `ON CONFLICT DO NOTHING` skips the id the reuse took).
 *
 * Which row: the first, of the next REUSE_WALK rows in id order, that the prune would delete now — finished
 * past its own queue's retention, its counter events folded (src/engine/purge.ts `pastRetentionSql`) — and
 * that nothing else still names: no dependencies of its own and no edge to a
 * dependent, here or on another database (the prune deletes those edges with their tasks; a reused row would
 * leave them for no one). The walk begins at the retention prune's cursor (`sweep_cursors`), or a day below
 * the queue's retention start where the cursor rests further down (REUSE_HORIZON_MS): the rows the prune goes
 * through next, so the two share the work, and what one takes the other never sees. A task past its
 * retention is gone for a client whichever of the two took it (`404` by its id, out of lists and counts).
 * Any queue's row: where many queues share a database, a queue's own rows are a few of the 16 (a new queue
 * has none), and all of them are the prune's alike. Nothing of the old task is left in it (every column is
 * set, a test compares them with an insert's), and it leaves under its old id, as the prune's delete would:
 * a move copying or deleting that id (src/engine/transit.ts) finds what it finds after a prune.
 *
 * Only a task the call made its own id for (a client's id may be another task's), without a unique key or
 * dependencies, in a call of one: the insert path of everything else is unchanged. `UPDATE OR IGNORE`: a
 * new task whose dedupe key a live task holds reuses nothing, and the insert after it finds the holder as
 * before.
 *
 * A tombstone (the row of a completed task of a queue that keeps none: src/engine/complete-tombstone.ts) is
 * taken the same way, once the counter fold passed it (tombstoneSql), where no row past its retention is found:
 * a queue of `retention_s: 0` writes 4 rows a task from its second minute on, the tombstone's included.
 *
 * A new column of `tasks` needs its default here (RESET) or among the insert's columns (taskColumnsSql):
 * test/engine/d1/reuse-rows.test.ts compares every column of a reused row with an inserted one.
 */

/** Rows one reuse reads past the prune's cursor at most: 16. A reuse that finds none costs those reads
 * ($0.016 per million enqueues at D1's $0.001 per million rows read) and the insert; in a queue past its
 * retention the first row is usually one (the prune walks the same rows in the same order). */
export const REUSE_WALK = 16;

/** Every column an insert leaves to its default, with that default (src/db/schema.ts). */
const RESET: Array<[string, SQL]> = [
  ["result", sql`NULL`],
  ["errors", sql`'[]'`],
  ["attempts", sql`0`],
  ["lease_token", sql`NULL`],
  ["lease_holder", sql`NULL`],
  ["lease_expires_at", sql`NULL`],
  ["lease_visibility_s", sql`NULL`],
  ["lease_took_over_expired", sql`NULL`],
  ["claim_by", sql`NULL`],
  ["acked_with", sql`NULL`],
  ["cancel_requested", sql`0`],
  ["progress", sql`NULL`],
  ["progress_message", sql`NULL`],
  ["started_at", sql`NULL`],
  ["finished_at", sql`NULL`],
  ["checkpoint", sql`NULL`],
  ["depends_on", sql`NULL`],
  ["waiting_on", sql`NULL`],
  ["on_dependency_failure", sql`NULL`],
  ["ready_at", sql`NULL`],
  ["ready_priority", sql`NULL`],
];

/** Whether a chunk's task may take a reused row (see above): one plain task whose id the call made. */
export function reusesRow(chunk: InsertRow[], idsMadeHere: boolean): boolean {
  const row = chunk[0];
  return idsMadeHere && chunk.length === 1 && row !== undefined && row.unique === null && row.dependsOn === null;
}

/**
 * The UPDATE that makes a row past its retention the chunk's one task, where `guard` holds (the insert's own
 * guard). Returns what the insert returns (id, state, in_row), or nothing when no row could be reused.
 */
export function reuseRowSql(queue: string, row: InsertRow, now: number, guard: SQL): SQL {
  const set = [...taskColumnsSql(queue, now, PLAIN_SHAPE, false, true), ...RESET];
  return sql`UPDATE OR IGNORE tasks SET ${sql.join(
    set.map(([column, value]) => sql`${sql.raw(column)} = ${value}`),
    sql`, `,
  )}
    FROM json_each(${`[${row.json}]`}) AS j
    WHERE tasks.id = coalesce((${reusableSql(queue, now)}), (${tombstoneSql()})) AND ${guard}
    RETURNING id, state, uncounted IS NOT NULL AS in_row`;
}

/** How far below the ids of its retention's start a walk begins: a day. The prune deletes every row past its
 * retention at each tick (a tick goes on while its windows are mostly deleted), so the rows a day further down
 * are the ones it keeps — long-delayed live tasks, longer-kept queues' rows, a `retention_s: 0` queue's dead
 * ones — and a walk that began among them, at the bottom of the table where the prune's cursor rests after a
 * whole walk, would read its 16 rows there and find none, for every enqueue. */
export const REUSE_HORIZON_MS = 86_400_000;

/** The id of the first row of the walk a reuse by `queue` may take, or null. The enqueuing queue's retention
 * places the walk: it ends below the ids of tasks created since that retention began (a task of a queue
 * keeping its tasks as long cannot be past it above: a task finishes after it is created), and begins at the
 * prune's cursor, or REUSE_HORIZON_MS below that start where the cursor is further down (a queue of
 * `retention_s: 0` keeps its dead tasks for the default retention: the horizon is below that). Each row is
 * judged by its own queue's retention (`pastRetentionSql`): a longer-keeping queue's rows are passed over; a
 * shorter-keeping one's past retention lie further up, where that queue's own enqueues walk. */
function reusableSql(queue: string, now: number): SQL {
  const cursor = sql`coalesce((SELECT position FROM sweep_cursors WHERE name = ${PRUNE_CURSOR}), '')`;
  const stored = sql`(SELECT retention_s FROM queues WHERE name = ${queue})`;
  const retention = sql`coalesce(${stored}, ${DEFAULT_QUEUE_CONFIG.retention_s})`;
  const below = idLowerBoundSql(sql`${now} - 1000 * ${retention}`);
  // What the queue keeps a task for at most: its retention, or the default for a queue of 0 (its dead ones).
  const kept = sql`coalesce(nullif(${stored}, 0), ${DEFAULT_QUEUE_CONFIG.retention_s})`;
  const from = sql`max(${cursor}, ${idLowerBoundSql(sql`${now} - 1000 * ${kept} - ${REUSE_HORIZON_MS}`)})`;
  return sql`SELECT d.id FROM (SELECT id, queue, state, finished_at, uncounted, depends_on FROM tasks
      WHERE id > ${from} AND id < ${below} ORDER BY id LIMIT ${REUSE_WALK}) AS d
    WHERE ${pastRetentionSql(sql`d`, now)} AND d.depends_on IS NULL
      AND NOT EXISTS (SELECT 1 FROM task_edges e WHERE e.dependency = d.id)
      AND NOT EXISTS (SELECT 1 FROM remote_edges r WHERE r.dependency = d.id)
    LIMIT 1`;
}

/**
 * The id of the oldest tombstone (a completed task of a queue that keeps none: src/engine/tombstone-mark.ts)
 * the counter fold passed (its events added up: a task's below the fold's cursor; every one where no fold
 * ran), or null. Tombstones lie together above every task in the key, so this reads the first of them and
 * nothing else — whatever other queues' rows the database holds — past the few (at most REUSE_WALK) of
 * dependents it passes over.
 */
function tombstoneSql(): SQL {
  const folded = foldedTombstonesSql(sql`tasks`);
  return sql`SELECT d.id FROM (SELECT id, depends_on FROM tasks WHERE ${folded} ORDER BY id LIMIT ${REUSE_WALK}) AS d
    WHERE d.depends_on IS NULL LIMIT 1`;
}

/** ULIDs' alphabet (Crockford's base 32), as the ulid package encodes time. */
const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/**
 * The smallest ULID of millisecond `ms` (an SQL integer), in SQL: what purge.ts's `idLowerBound` makes in
 * JavaScript, for a time only the database knows (a queue's retention). Its 10 time characters, 5 bits each
 * from the top, then 16 zeros.
 */
export function idLowerBoundSql(ms: SQL): SQL {
  const chars = Array.from({ length: 10 }, (_, k) =>
    sql.raw(`substr('${CROCKFORD}', ((t.ms >> ${5 * (9 - k)}) & 31) + 1, 1)`),
  );
  return sql`(SELECT ${sql.join(chars, sql` || `)} || '${sql.raw("0".repeat(16))}' FROM (SELECT max(0, ${ms}) AS ms) AS t)`;
}
