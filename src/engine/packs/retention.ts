import { sql, type SQL } from "drizzle-orm";
import { batchAll, type Db } from "../../db/client";
import { idLowerBound } from "../purge";
import { DEFAULT_QUEUE_CONFIG } from "../queue-config";

/**
 * Retention over packs (the port's `pruneByRetention`, src/engine/store-upkeep.ts): a pack is deleted — its
 * row, its tasks' dedupe-key rows (`pack_keys`), client-id rows (`pack_ids`) and spill rows (`pack_spill`),
 * in one batch — once it is finished (`live = 0`: every slot completed, dead or cancelled; the row's CHECK
 * ties `finished_at` to it) past its queue's retention. A pack with one live slot is never deleted, whatever
 * its other slots: a pack ends as a whole, so a task finished early in it is kept until its pack's last one
 * is past retention (never deleted before its time, sometimes after). A queue of `retention_s: 0` keeps a
 * pack that holds a dead or cancelled task for the default retention, as the D1 store keeps such tasks.
 *
 * The prune walks only finished packs: the finished-pack index (`packs_done`, migration 0023: queue, id), a
 * queue at a time, each queue's entries in id order up to its own cutoff — the id of `now` less its retention
 * (pack ids are time-ordered: pack-ids.ts; a pack finishes after it is created) — then a seek to the next
 * queue, from where the last call stopped (`sweep_cursors`). So a pass reads the finished packs older than
 * their queue's retention (those it deletes, and the few it keeps: a pack created before the cutoff and
 * finished after it, a `retention_s: 0` queue's dead ones) and one seek per queue, never a live pack nor a
 * finished one within its retention. (Until issue 32's last stop it walked the table's key below the shortest
 * retention's cutoff: every live pack of every queue was read on each pass.)
 */

/**
 * Packs one prune window reads, in primary-key order. Why 500: a window's walk reads only the leading
 * columns of each row (id, queue, finished_at: never the slots), and its delete rewrites nothing; 500 packs
 * are up to 50,000 tasks, and at a typical 1 KiB per task some 50 MB of pages freed in one batch — a few
 * tens of milliseconds of D1, so requests run between windows.
 */
export const PACK_PRUNE_WINDOW = 500;

/**
 * Most windows one call prunes, going on only while most of a window was deleted. Why 20: 10,000 packs a
 * call (the D1 store's bound of 5,000 statements' rows, twice: a pack is one row); at the cron tick's once a
 * minute that is 1,000,000 tasks a minute in full packs, and 10,000 in packs of one — a database's enqueue
 * rate in packs of one, past which calls fall behind and the next tick goes on.
 */
export const PACK_PRUNE_ROUNDS = 20;

/** The prune's cursor in `sweep_cursors` (the D1 store's is "retention"): JSON `[queue, pack id]`, the last
 * finished pack looked at. (The name of the walk of the table's key before, "pack_retention", is left unread.) */
const PACK_PRUNE_CURSOR = "pack_retention_done";

/** A pack id ordered with the time prefix of `ms` (a pack id is a ULID less two characters: pack-ids.ts). */
const packIdBound = (ms: number) => idLowerBound(ms).slice(0, 24);

/** Where the walk is: a queue and the last pack id looked at in it ("" before its first). `queue` "" is before
 * the first queue; `after` "~" is past the queue's last pack (the next step seeks the next queue). */
interface WalkAt {
  queue: string;
  after: string;
}

const START: WalkAt = { queue: "", after: "~" };

/**
 * Deletes finished packs past their queue's retention, up to PACK_PRUNE_ROUNDS windows per call, going on
 * from where the last call stopped; never a pack with a live slot, nor one before its time.
 *
 * @example
 * const { pruned } = await prunePacksByRetention(db, Date.now());
 */
export async function prunePacksByRetention(db: Db, now: number): Promise<{ pruned: number; windows: number }> {
  const stored = await db.get<{ position: string }>(
    sql`SELECT position FROM sweep_cursors WHERE name = ${PACK_PRUNE_CURSOR}`,
  );
  const from = stored ? readCursor(stored.position) : START;
  let at: WalkAt | null = from;
  let pruned = 0;
  let windows = 0;
  for (let round = 0; round < PACK_PRUNE_ROUNDS && at !== null; round++) {
    const step = await pruneWindow(db, now, at);
    // A window is a walk that read packs; a queue with nothing past its cutoff cost a seek, not a window.
    if (step.read > 0) windows++;
    pruned += step.pruned;
    at = step.next;
    // Past the last queue, or a window mostly kept (within retention, live packs kept): the next call goes on.
    if (step.read > 0 && step.pruned < step.read / 2) break;
  }
  const position = JSON.stringify(at === null ? [START.queue, START.after] : [at.queue, at.after]);
  if (position !== stored?.position) {
    await db.run(sql`INSERT INTO sweep_cursors (name, position) VALUES (${PACK_PRUNE_CURSOR}, ${position})
      ON CONFLICT (name) DO UPDATE SET position = excluded.position`);
  }
  return { pruned, windows };
}

function readCursor(position: string): WalkAt {
  const [queue, after] = JSON.parse(position) as [string, string];
  return { queue, after };
}

/** The queue whose finished packs come next after `queue` (one seek in `packs_done`), or null: none. */
async function nextQueue(db: Db, queue: string): Promise<string | null> {
  const row = await db.get<{ queue: string }>(sql`SELECT queue FROM packs INDEXED BY packs_done
    WHERE queue > ${queue} AND finished_at IS NOT NULL ORDER BY queue LIMIT 1`);
  return row?.queue ?? null;
}

/** One window: up to PACK_PRUNE_WINDOW finished packs of one queue after `at` and below its cutoff; if any,
 * those past retention deleted with their side rows. `next` is where the walk goes on (null: past the last
 * queue, the walk starts again). */
async function pruneWindow(
  db: Db,
  now: number,
  at: WalkAt,
): Promise<{ pruned: number; read: number; next: WalkAt | null }> {
  let { queue, after } = at;
  if (after === "~") {
    const next = await nextQueue(db, queue);
    if (next === null) return { pruned: 0, read: 0, next: null };
    queue = next;
    after = "";
  }
  const retention = await db.get<{ s: number | null }>(sql`SELECT retention_s AS s FROM queues WHERE name = ${queue}`);
  const below = packIdBound(now - (retention?.s ?? DEFAULT_QUEUE_CONFIG.retention_s) * 1000);
  const seen = await db.get<{ n: number; last: string | null }>(sql`SELECT count(*) AS n, max(id) AS last
    FROM (SELECT id FROM packs INDEXED BY packs_done WHERE queue = ${queue} AND finished_at IS NOT NULL
      AND id > ${after} AND id < ${below} ORDER BY id LIMIT ${PACK_PRUNE_WINDOW})`);
  const { n, last } = seen ?? { n: 0, last: null };
  const next = { queue, after: n < PACK_PRUNE_WINDOW || last === null ? "~" : last };
  if (last === null) return { pruned: 0, read: 0, next };
  return { pruned: await deleteWindow(db, now, queue, after, last), read: n, next };
}

/** Deletes the finished packs of `queue` in (after, last] past retention, with their side rows: one batch. */
async function deleteWindow(db: Db, now: number, queue: string, after: string, last: string): Promise<number> {
  // Each statement finds the doomed packs again (one batch: one transaction, so all see the same packs), the
  // side rows first — they are found through the packs' slots.
  // Each names `packs_done`: its (queue, id) range is the window's packs; the key's range (after, last] would
  // be every queue's packs created in that time, live ones included.
  const doomed = sql`SELECT * FROM packs p INDEXED BY packs_done WHERE ${prunable(sql`p`, now, queue, after, last)}`;
  const slots = sql`(${doomed}) AS d, json_each(d.slots) AS j`;
  const deleted = await batchAll<{ id: string }>(db, [
    // A key row of a doomed task (the row names the task: a key since taken by another task is left alone).
    sql`DELETE FROM pack_keys WHERE (queue, dedupe_key, task_id) IN (
      SELECT d.queue, j.value->>'d', coalesce(j.value->>'i', k.task_id) FROM ${slots}
        JOIN pack_keys k ON k.queue = d.queue AND k.dedupe_key = j.value->>'d'
      WHERE j.value->>'d' IS NOT NULL AND (j.value->>'i' IS NOT NULL OR substr(k.task_id, 1, 24) = d.id))`,
    sql`DELETE FROM pack_ids WHERE id IN (SELECT j.value->>'i' FROM ${slots} WHERE j.value->>'i' IS NOT NULL)
      AND pack IN (SELECT id FROM packs p INDEXED BY packs_done WHERE ${prunable(sql`p`, now, queue, after, last)})`,
    // A slot's spill rows are keyed by its address (its pack's id and two characters): a range of the key.
    sql`DELETE FROM pack_spill WHERE task_id IN (SELECT s.task_id FROM packs p INDEXED BY packs_done
      JOIN pack_spill s ON s.task_id >= p.id AND s.task_id < p.id || '~' WHERE ${prunable(sql`p`, now, queue, after, last)})`,
    // A doomed task's edges as a dependency (settled: it finished), as the row store's prune deletes them: a
    // delivered settlement to a dependent elsewhere, and an edge whose dependent here is gone already (one kept
    // longer lists it as pruned, and its own prune deletes the edge). Found by each table's key: the pack's
    // range of task ids, and its tasks' client ids. The pairs are a materialised CTE, as the row store's prune
    // has them (src/engine/purge.ts prunedEdgesSql): with the UNION ALL inside the DELETE's IN, SQLite scanned
    // the whole edge table against it (every edge of the database read per window, without statistics:
    // test/engine/packs/walks.test.ts, and with them: test/engine/stats-plans/); from a CTE, CROSS JOINed, it
    // probes the key once per pair.
    ...["task_edges", "remote_edges"].map(
      (table) => sql`WITH d AS MATERIALIZED (${doomed}),
        pairs(dependency, dependent) AS MATERIALIZED (
          SELECT e.dependency, e.dependent FROM d CROSS JOIN ${sql.raw(table)} e
            ON e.dependency >= d.id AND e.dependency < d.id || '~'
          UNION ALL
          SELECT e.dependency, e.dependent FROM d CROSS JOIN json_each(d.slots) AS j
            CROSS JOIN ${sql.raw(table)} e ON e.dependency = j.value->>'i')
        DELETE FROM ${sql.raw(table)} WHERE (dependency, dependent) IN (SELECT dependency, dependent FROM pairs)
          AND ${table === "task_edges" ? sql`NOT EXISTS (SELECT 1 FROM tasks o WHERE o.id = dependent)` : sql`delivered_at IS NOT NULL`}`,
    ),
    sql`DELETE FROM packs INDEXED BY packs_done WHERE ${prunable(sql`packs`, now, queue, after, last)} RETURNING id`,
  ]);
  return deleted.at(-1)?.length ?? 0;
}

/**
 * Whether pack `p` (a table alias) of `queue` is finished past its queue's retention, with an id in (after, last]. On a
 * queue of `retention_s: 0`, a pack holding a dead or cancelled task (its `st` not all `c` or `o`) is kept for the
 * default retention.
 */
function prunable(p: SQL, now: number, queue: string, after: string, last: string): SQL {
  const retention = sql`(SELECT q.retention_s FROM queues q WHERE q.name = ${p}.queue)`;
  return sql`${p}.queue = ${queue} AND ${p}.id > ${after} AND ${p}.id <= ${last} AND ${p}.live = 0 AND ${p}.finished_at IS NOT NULL
    AND ${p}.finished_at < ${now} - 1000 * CASE
      WHEN ${retention} = 0 AND replace(replace(${p}.st, 'c', ''), 'o', '') <> '' THEN ${DEFAULT_QUEUE_CONFIG.retention_s}
      ELSE coalesce(${retention}, ${DEFAULT_QUEUE_CONFIG.retention_s}) END`;
}
