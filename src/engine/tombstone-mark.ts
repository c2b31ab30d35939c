import { sql, type SQL } from "drizzle-orm";

/**
 * A tombstone (src/engine/complete-tombstone.ts) is the row of a completed task that its queue keeps no
 * completed task of (`retention_s: 0`), moved out of every client's reach until an enqueue reuses it: its id
 * is this mark and the task's id, its queue the mark and the queue's name. Why '~': it is in neither a ULID
 * (Crockford base 32, the only ids a client may give or be given) nor a queue name (QUEUE_NAME_PATTERN), so
 * no read by id or by queue ever finds one; and it sorts after every character of an id, so the tombstones
 * lie together above every task in the primary key, in their tasks' time order: an enqueue finds the oldest
 * in one step whatever other queues' rows the database holds (src/engine/reuse-rows.ts), and no walk of the
 * tasks' ids (the retention prune's, the lease's, a move's) meets one.
 */
export const TOMBSTONE_MARK = "~";

/** How long the retention prune leaves a tombstone for an enqueue to reuse: 10 minutes. A tombstone is
 * reusable once the counter fold passed it (30-90 s after its task was created) and costs a row written to
 * delete, so the longer it waits the likelier a later enqueue takes it instead; but a queue that slows down
 * leaves that long's tombstones unreused, which is storage — at the ~3,800 tasks/s a database can run
 * (docs/scale.md), 10 minutes is ~2.3 million tombstones of ~290 bytes (the bill's bytes kept a task at
 * `retention_s: 0`, docs/benchmarks.md section 1b): about 0.7 GB of D1's 10 GB. */
export const TOMBSTONE_KEEP_MS = 600_000;

/** Whether task `t` (a table alias) is a tombstone, in SQL. */
export function isTombstoneSql(t: SQL): SQL {
  return sql`substr(${t}.queue, 1, 1) = ${TOMBSTONE_MARK}`;
}

/** The queue whose counters task `t`'s events count in: its own, or a tombstone's task's. */
export function eventQueueSql(t: SQL): SQL {
  return sql`CASE WHEN ${isTombstoneSql(t)} THEN substr(${t}.queue, 2) ELSE ${t}.queue END`;
}

/** The condition on `t` (a table alias) for "the tasks of `queue`, tombstones included": counter reads. */
export function ofQueueOrItsTombstonesSql(t: SQL, queue: string): SQL {
  return sql`${t}.queue IN (${queue}, ${TOMBSTONE_MARK} || ${queue})`;
}

/** The tombstones' ids that stand for task ids in (from, to] (SQL text bounds; `to` null: no upper bound), as
 * a condition on `t`'s id: the same range of the key, moved above the tasks. */
export function tombstoneRangeSql(t: SQL, from: SQL, to: SQL | null): SQL {
  const upper = to === null ? sql`` : sql` AND ${t}.id <= ${TOMBSTONE_MARK} || ${to}`;
  return sql`${t}.id > ${TOMBSTONE_MARK} || ${from}${upper}`;
}

/** The id of the tombstone of task `id`. */
export function tombstoneIdOf(id: string): string {
  return TOMBSTONE_MARK + id;
}
