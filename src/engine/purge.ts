import { FINAL_STATES, type FinalState } from "../contracts/states";
import { sql, type SQL } from "drizzle-orm";
import { encodeTime } from "ulid";
import { batchAll, type Db } from "../db/client";
import { MAX_PURGE_PER_CALL } from "../contracts/limits";
import { DEFAULT_QUEUE_CONFIG } from "./queue-config";
import { countedInRowSql, foldedTombstonesSql } from "./counters-in-row";
import { TOMBSTONE_KEEP_MS } from "./tombstone-mark";

/**
 * The smallest ULID of millisecond `ms`. Ids are ULIDs, time-ordered, and a task finishes after it is
 * created, so every task finished before `ms` has an id below this bound: purges walk the primary key up
 * to it instead of paying for an index on finished_at with every task.
 */
export function idLowerBound(ms: number): string {
  return encodeTime(Math.max(0, ms), 10) + "0".repeat(16);
}

/** Which finished tasks of a queue a purge deletes. */
export interface PurgeOptions {
  /** Only tasks finished strictly before this time (ms). */
  before: number;
  /** Only these finished states; default all of them. */
  states?: FinalState[];
  /** At most this many (never more than MAX_PURGE_PER_CALL); call again for more. */
  limit?: number;
}

/**
 * Deletes finished (completed, dead, cancelled) tasks of a queue that finished before `before`.
 * At most `limit` per call, and never more than MAX_PURGE_PER_CALL. A task whose counter events its row still
 * keeps (created in the last 30-90 s: src/engine/counters-in-row.ts) is left for a later purge or the prune.
 *
 * @example
 * const { purged } = await purgeTasks(db, "emails", { before: Date.now() - 86_400_000 });
 */
export async function purgeTasks(db: Db, queue: string, options: PurgeOptions): Promise<{ purged: number }> {
  const states = JSON.stringify(options.states ?? FINAL_STATES);
  const limit = Math.min(options.limit ?? MAX_PURGE_PER_CALL, MAX_PURGE_PER_CALL);
  const rows = await db.all<{ id: string }>(sql`DELETE FROM tasks WHERE id IN (
      SELECT id FROM tasks
      WHERE id < ${idLowerBound(options.before)} AND queue = ${queue}
        AND finished_at IS NOT NULL AND finished_at < ${options.before}
        AND state IN (SELECT value FROM json_each(${states}))
        AND NOT ${countedInRowSql(sql`tasks`)}
      LIMIT ${limit}
    ) RETURNING id`);
  return { purged: rows.length };
}

/** Rows of `tasks` one prune window reads, in primary-key order, whatever they are. Why 2,500: live tasks
 * (a backlog, delayed tasks) and tasks of queues that keep theirs longer sit below the retention cutoff too,
 * and the walk must read past them; a window of 2,500 holds D1 for a few milliseconds, and with
 * PRUNE_ROUNDS keeps the prune's share of a tick under the live walk's 10,000-row budget. */
export const PRUNE_WINDOW = 2_500;

/** Most windows one tick prunes, going on only while most of a window was deleted. Why 100: a database
 * runs at most about 3,800 tasks/s (docs/scale.md), 228,000 finished tasks a minute, and 100 windows delete
 * up to 250,000 — so the prune keeps up with any rate a database can sustain — while each statement stays
 * a few milliseconds with requests running between them; a window that finds little to delete (live
 * tasks, longer retention) ends the tick's share at one window. */
export const PRUNE_ROUNDS = 100;

/** The prune's cursor in `sweep_cursors`. */
export const PRUNE_CURSOR = "retention";

/** One window of the retention prune: what it deleted, read, and where the next one starts ("" once the
 * window reached the cutoff: the walk starts again from the lowest id). */
export interface PruneWindow {
  pruned: number;
  read: number;
  next: string;
}

/**
 * The id below which the retention prune looks: tasks created before the shortest retention in use began.
 * A task finishes after it is created, so none above it can be past its queue's retention.
 */
export async function retentionCutoffId(db: Db, now: number): Promise<string> {
  const shortest = await db.get<{ s: number | null }>(sql`SELECT min(retention_s) AS s FROM queues`);
  const minRetentionS = Math.min(shortest?.s ?? Infinity, DEFAULT_QUEUE_CONFIG.retention_s);
  return idLowerBound(now - minRetentionS * 1000);
}

/**
 * Prunes one window: finds the first `window` tasks after id `after` and below id `below`, then, if any of
 * them is finished, deletes those finished longer ago than their queue's retention. The delete tests each row
 * as it goes, so a task redriven or created meanwhile is never deleted before its time.
 *
 * @example
 * const below = await retentionCutoffId(db, now);
 * let after = "";
 * do after = (await pruneWindow(db, now, { after, below })).next; while (after !== "");
 */
export async function pruneWindow(
  db: Db,
  now: number,
  walk: { after: string; below: string; window?: number },
): Promise<PruneWindow> {
  const window = walk.window ?? PRUNE_WINDOW;
  const seen = await db.get<{ n: number; finished: number; last: string | null }>(sql`SELECT count(*) AS n,
      coalesce(sum(finished_at IS NOT NULL), 0) AS finished, max(id) AS last
    FROM (SELECT id, finished_at FROM tasks WHERE id > ${walk.after} AND id < ${walk.below} ORDER BY id LIMIT ${window})`);
  const { n, finished, last } = seen ?? { n: 0, finished: 0, last: null };
  // The same stretch of the primary key again, deleting in place: one read per row and one per finished
  // row's queue, where a list of ids (json_each) costs four per row. The dependency edges that lose their
  // last end go first, in the same batch (D1's one transaction: both see the same rows to delete, and a
  // crash leaves both or neither — an edge whose tasks are gone could never be found again).
  const deleted =
    finished === 0 || last === null
      ? []
      : ((
          await batchAll<{ id: string }>(db, [
            prunedEdgesSql(now, walk.after, last),
            // A pruned dependent's waits on other databases (src/engine/remote-dependencies.ts) go with it.
            sql`DELETE FROM remote_waits WHERE dependent IN (SELECT d.id FROM tasks d
              WHERE ${prunable(sql`d`, now, walk.after, last)} AND d.depends_on IS NOT NULL)`,
            // A pruned dependency's delivered settlements (kept for its dependents page) go with it, found
            // from remote_edges' own key range of the window (few rows: only cross-database edges), each
            // checked against its task. One still owed stays for its delivery, which deletes it then.
            sql`DELETE FROM remote_edges WHERE dependency > ${walk.after} AND dependency <= ${last}
              AND delivered_at IS NOT NULL
              AND EXISTS (SELECT 1 FROM tasks d WHERE d.id = remote_edges.dependency
                AND ${prunable(sql`d`, now, walk.after, last)})`,
            sql`DELETE FROM tasks WHERE ${prunable(sql`tasks`, now, walk.after, last)} RETURNING id`,
          ])
        ).at(-1) ?? []);
  const next = n < window || last === null ? "" : last;
  return { pruned: deleted.length, read: n, next };
}

/**
 * Whether task `t` (a table alias) is finished past its queue's retention, with an id in (after, last]. A
 * queue of `retention_s: 0` keeps no completed task (the completion makes most a tombstone:
 * src/engine/complete-tombstone.ts; the few it kept, for children or dependents, go now) but keeps its dead,
 * cancelled and expired ones for the default retention: they are what a dead-letter view and a redrive need.
 */
function prunable(t: SQL, now: number, after: string, last: string): SQL {
  return sql`${t}.id > ${after} AND ${t}.id <= ${last} AND ${pastRetentionSql(t, now)}`;
}

/**
 * Whether task `t` (a table alias) is finished past its queue's retention and its counter events are folded:
 * a row the prune deletes, and an enqueue may reuse (src/engine/reuse-rows.ts). Reads `t`'s id, queue, state,
 * finished_at and uncounted.
 */
export function pastRetentionSql(t: SQL, now: number): SQL {
  const retention = sql`(SELECT q.retention_s FROM queues q WHERE q.name = ${t}.queue)`;
  // A task whose counter events its row still keeps waits for the fold (src/engine/counters-in-row.ts).
  return sql`NOT ${countedInRowSql(t)}
    AND ${t}.finished_at IS NOT NULL AND ${t}.finished_at < ${now} - 1000 * CASE
      WHEN ${retention} = 0 AND ${t}.state <> 'completed' THEN ${DEFAULT_QUEUE_CONFIG.retention_s}
      ELSE coalesce(${retention}, ${DEFAULT_QUEUE_CONFIG.retention_s}) END`;
}

/**
 * Deletes the `task_edges` rows that a prune window's deletions leave without either end: an edge of a task
 * deleted now whose other end is deleted now too or already gone. An edge keeps while one end is kept (a
 * dependent kept longer still lists its pruned dependencies; a live dependency still settles it), and goes
 * when that end is pruned in turn. Found from the window's tasks only, by primary key: each one's edges as
 * a dependency (a prefix of task_edges' key) and as a dependent (its own `depends_on`, at most
 * MAX_DEPENDENCIES ids) — a task without dependencies costs one probe read, nothing written. Its work is
 * bounded by the edges those tasks' enqueues wrote (each edge is deleted once, and looked at at most twice,
 * once from each end), so no bound of its own: a window's edges were paid for, row by row, at enqueue.
 */
function prunedEdgesSql(now: number, after: string, last: string): SQL {
  const gone = (id: SQL) =>
    sql`NOT EXISTS (SELECT 1 FROM tasks o WHERE o.id = ${id} AND NOT (${prunable(sql`o`, now, after, last)}))`;
  // The window's prunable tasks, read once (materialised: both branches use them). The edges to delete are a
  // materialised CTE too: with the UNION ALL written inside the DELETE's IN, SQLite scanned all of task_edges
  // against it (every edge of the database read per prune window: test/engine/d1/prune-walk.test.ts); from a
  // CTE it probes the primary key once per pair. CROSS JOIN, as pack retention's (packs/retention.ts): the
  // window's tasks first, their edges by key, whatever the planner's statistics say.
  return sql`WITH doomed AS MATERIALIZED (SELECT d.id, d.depends_on FROM tasks d WHERE ${prunable(sql`d`, now, after, last)}),
    pairs(dependency, dependent) AS MATERIALIZED (
      SELECT e.dependency, e.dependent FROM doomed d CROSS JOIN task_edges e ON e.dependency = d.id
        WHERE ${gone(sql`e.dependent`)}
      UNION ALL
      SELECT j.value, d.id FROM doomed d, json_each(d.depends_on) AS j
        WHERE d.depends_on IS NOT NULL AND ${gone(sql`j.value`)})
    DELETE FROM task_edges WHERE (dependency, dependent) IN (SELECT dependency, dependent FROM pairs)`;
}

/**
 * Deletes finished tasks past their queue's retention (cron). Walks the primary key below the cutoff a
 * window at a time from where the last tick stopped (`sweep_cursors`): a tick reads one window (PRUNE_WINDOW
 * rows) however many live tasks lie below the cutoff, and another only after one mostly deleted — its reads
 * follow what it deletes, never the live set or the recent bulk of the table. A finished task is deleted once
 * the walk passes it after its queue's retention: within one whole walk of the rows below the cutoff.
 *
 * @example
 * const { pruned } = await pruneByRetention(db, Date.now());
 */
export async function pruneByRetention(db: Db, now: number): Promise<{ pruned: number; windows: number }> {
  const stored = await db.get<{ position: string }>(
    sql`SELECT position FROM sweep_cursors WHERE name = ${PRUNE_CURSOR}`,
  );
  const below = await retentionCutoffId(db, now);
  let at = stored?.position ?? "";
  let pruned = 0;
  let windows = 0;
  for (let round = 0; round < PRUNE_ROUNDS; round++) {
    const step = await pruneWindow(db, now, { after: at, below });
    windows++;
    pruned += step.pruned;
    at = step.next;
    // At the cutoff, or a window mostly kept (live tasks, longer retention): the next tick goes on.
    if (at === "" || step.pruned < step.read / 2) break;
  }
  if (at !== (stored?.position ?? "")) {
    await db.run(sql`INSERT INTO sweep_cursors (name, position) VALUES (${PRUNE_CURSOR}, ${at})
      ON CONFLICT (name) DO UPDATE SET position = excluded.position`);
  }
  const tombstones = await pruneTombstones(db, now);
  return { pruned: pruned + tombstones.pruned, windows: windows + tombstones.windows };
}

/**
 * Deletes the tombstones (src/engine/tombstone-mark.ts) no enqueue reused within TOMBSTONE_KEEP_MS of their
 * task's completion, the oldest first, PRUNE_WINDOW at a time while a window is full (at most PRUNE_ROUNDS).
 * Only tombstones the counter fold passed (their events added up): those of tasks below its cursor — all of
 * them where no fold ran, none kept events then — and of tasks created before TOMBSTONE_KEEP_MS ago (a task
 * finishes after it is created), so a window reads the older part of the tombstones and nothing else: they
 * lie together above every task (their ids begin with the mark).
 */
async function pruneTombstones(db: Db, now: number): Promise<{ pruned: number; windows: number }> {
  const folded = foldedTombstonesSql(sql`tasks`, idLowerBound(now - TOMBSTONE_KEEP_MS));
  let pruned = 0;
  let windows = 0;
  const window = sql`SELECT id, depends_on FROM tasks
    WHERE ${folded} AND finished_at < ${now - TOMBSTONE_KEEP_MS} ORDER BY id LIMIT ${PRUNE_WINDOW}`;
  for (let round = 0; round < PRUNE_ROUNDS; round++) {
    const [, gone = []] = await batchAll<{ id: string }>(db, [
      // A dependent's waits on other databases go with it, as the retention prune's (its task's id: the
      // waits were written under it). The same window of the key in both statements of the batch.
      sql`DELETE FROM remote_waits WHERE dependent IN (SELECT substr(w.id, 2) FROM (${window}) AS w
        WHERE w.depends_on IS NOT NULL)`,
      sql`DELETE FROM tasks WHERE id IN (SELECT id FROM (${window})) RETURNING id`,
    ]);
    windows++;
    pruned += gone.length;
    if (gone.length < PRUNE_WINDOW) break;
  }
  return { pruned, windows };
}
