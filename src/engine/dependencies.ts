import { sql, type SQL } from "drizzle-orm";
import type { Db } from "../db/client";
import { EdgeqError } from "../contracts/errors";
import { MAX_DEPENDENCIES, MAX_PRIORITY } from "../contracts/limits";
import type { SettledDependent } from "./ack";
import type { InsertRow, InsertShape, TaskField } from "./enqueue-rows";
import { packSlotCharSql, slotCharFinishedSql, slotCharStateSql } from "./packs/pack-task-sql";

/**
 * Dependencies between tasks of one database: a task enqueued with `depends_on` is `waiting` until every
 * dependency has finished, then `pending` (or, when one ended dead, cancelled or expired, what its
 * `on_dependency_failure` says: src/contracts/dependencies.ts).
 *
 * How it is kept:
 * - The dependent's enqueue statement counts its unfinished dependencies into `waiting_on` (a dependency
 *   already finished counts at once — its outcome too: a failed one ends the dependent under `fail` and
 *   `cancel`), and the next statement of the same batch writes one `task_edges` row per dependency, with the
 *   outcome of those already finished. Dependencies must exist when the dependent is enqueued, so no cycle
 *   can be built.
 * - A dependency finishing is settled by the trigger `tasks_settle_dependents` (migrations/0016), inside the
 *   very statement that finishes it — a completion, a failure, the reaper, a cancel, an expiry or a bulk
 *   action alike — so a dependent is never left waiting on a finished task, and no edge is counted twice
 *   (only edges without an outcome are counted, by the statement that gives them one). A completion costs
 *   its dependents one decrement each, never a read of their other dependencies: a join over 10,000
 *   children costs each child's completion one row of the join and one edge.
 * - A waiting task's priority is WAITING_PRIORITY and its run_at WAITING_RUN_AT: its live index entry sits
 *   after every priority a lease reads and past the due part the cron tick walks, so waiting tasks cost
 *   leases nothing; the priority and run time it asked for are kept in `ready_priority` and `ready_at` and
 *   taken on release.
 */

/** The run_at of a waiting task: 8.64e15 ms, the last instant a JavaScript Date can show (year 275760), so
 * it sorts after every real run time in the live index — where every lease and the tick stop reading. */
export const WAITING_RUN_AT = 8_640_000_000_000_000;

/** The priority of a waiting task: one below the lowest a task may have (MAX_PRIORITY), so that waiting
 * tasks sit after every priority a lease reads — a lease's pick reads `priority >= -MAX_PRIORITY` only, so
 * even a lease that finds fewer tasks than it asked for stops before them (without it, such a lease walked
 * every waiting task of its queue: 10,042 rows read beside 10,000 waiting, test/engine/fan-in.test.ts). */
export const WAITING_PRIORITY = -MAX_PRIORITY - 1;

/** A failed dependency's state: what makes `fail` and `cancel` end their dependents. */
const FAILED_STATES = sql`('dead', 'cancelled', 'expired')`;

/**
 * The insert shape of a chunk with dependencies (enqueue-rows.ts's `insertSql`): each row's dependencies are
 * read once, by primary key — how many are unfinished (`live`) and the first one that failed — and a row
 * without dependencies is inserted as a plain task. Read by the insert itself, so a dependency finishing
 * just before it counts at once and one finishing after it finds the edge the same batch writes.
 */
export function waitingShape(now: number): InsertShape {
  const deps = sql`json_each(r.value->'depends_on') AS d JOIN tasks t ON t.id = d.value`;
  // The dependencies that are no row: each one's pack slot state (`c`), NULL when it is no pack task either.
  const packDeps = sql`(SELECT d.value AS id, ${packSlotCharSql(sql`d.value`)} AS c FROM json_each(r.value->'depends_on') AS d
    WHERE NOT EXISTS (SELECT 1 FROM tasks t WHERE t.id = d.value)) AS p`;
  const policy = sql`j.value->>'on_dependency_failure'`;
  const hasDeps = sql`j.value->>'depends_on' IS NOT NULL`;
  const ends = sql`(${hasDeps} AND j.failed_by IS NOT NULL AND ${policy} IN ('fail', 'cancel'))`;
  const waits = sql`(${hasDeps} AND NOT ${ends} AND j.live > 0)`;
  return {
    // Dependencies on other databases (src/engine/remote-dependencies.ts) come counted in the row's JSON.
    // A dependency of the pack layout (src/engine/packs/) is read from its pack's slot, as a row is.
    source: (json) => sql`(SELECT r.value,
        (SELECT count(*) FROM ${deps} WHERE t.finished_at IS NULL) + coalesce(r.value->>'remote_live', 0)
          + (SELECT count(*) FROM ${packDeps} WHERE p.c IN ('p', 'w', 'r')) AS live,
        coalesce((SELECT t.id || ' ended ' || t.state FROM ${deps} WHERE t.state IN ${FAILED_STATES} LIMIT 1),
          (SELECT p.id || ' ended ' || ${slotCharStateSql(sql`p.c`)} FROM ${packDeps} WHERE p.c IN ('d', 'x') LIMIT 1),
          r.value->>'remote_failed_by') AS failed_by
      FROM json_each(${json}) AS r)`,
    state: sql`CASE WHEN ${ends} THEN (CASE WHEN ${policy} = 'cancel' THEN 'cancelled' ELSE 'dead' END)
      WHEN ${waits} THEN 'waiting' ELSE 'pending' END`,
    runAt: sql`CASE WHEN ${waits} THEN ${WAITING_RUN_AT} ELSE j.value->>'run_at' END`,
    priority: sql`CASE WHEN ${waits} THEN ${WAITING_PRIORITY} ELSE j.value->>'priority' END`,
    columns: sql`, depends_on, waiting_on, on_dependency_failure, ready_at, ready_priority, finished_at, errors`,
    values: sql`, CASE WHEN ${hasDeps} THEN j.value->'depends_on' END,
      CASE WHEN ${ends} THEN 0 WHEN ${hasDeps} THEN j.live END,
      ${policy},
      CASE WHEN ${hasDeps} THEN j.value->>'run_at' END,
      CASE WHEN ${hasDeps} THEN j.value->>'priority' END,
      CASE WHEN ${ends} THEN ${now} END,
      CASE WHEN ${ends} THEN json_array(json_object('attempt', 0, 'at', ${now},
        'message', 'dependency ' || j.failed_by, 'kind', 'dependency')) ELSE '[]' END`,
  };
}

/**
 * The edges of a chunk's dependents, run after its insert in the same batch: one row per (dependency,
 * dependent) for each row the insert created (created now, with dependencies: a row deduplicated onto an
 * older task writes none), with the outcome of a dependency that already finished (it was counted by the
 * insert) and `pruned` for one gone since the call's check (it finished before: not counted).
 */
export function edgesSql(chunk: InsertRow[], now: number): SQL {
  const ids = JSON.stringify(chunk.filter((r) => r.dependsOn !== null).map((r) => r.id));
  // A dependency of the pack layout is found by its slot (`pc`, its state character: NULL when no pack task).
  return sql`INSERT INTO task_edges (dependency, dependent, outcome)
    SELECT x.dependency, x.dependent, CASE WHEN x.row_id IS NOT NULL THEN x.row_outcome
        WHEN x.pc IS NOT NULL THEN CASE WHEN ${slotCharFinishedSql(sql`x.pc`)} THEN ${slotCharStateSql(sql`x.pc`)} END
        ELSE 'pruned' END
    FROM (SELECT d.value AS dependency, t.id AS dependent, dep.id AS row_id,
        CASE WHEN dep.finished_at IS NOT NULL THEN dep.state END AS row_outcome,
        CASE WHEN dep.id IS NULL THEN ${packSlotCharSql(sql`d.value`)} END AS pc
      FROM json_each(${ids}) AS j JOIN tasks t ON t.id = j.value AND t.created_at = ${now} AND t.depends_on IS NOT NULL
        JOIN json_each(t.depends_on) AS d LEFT JOIN tasks dep ON dep.id = d.value) AS x
    WHERE x.row_id IS NOT NULL OR x.pc IS NOT NULL
      OR NOT EXISTS (SELECT 1 FROM remote_waits w WHERE w.dependent = x.dependent AND w.dependency = x.dependency)
    ON CONFLICT DO NOTHING`;
}

/** Whether any of the rows has dependencies. */
export function hasDependencies(rows: InsertRow[]): boolean {
  return rows.some((r) => r.dependsOn !== null);
}

/**
 * Refuses, before anything is stored, rows whose dependencies are too many (MAX_DEPENDENCIES) or not tasks
 * of this database: unknown, pruned (finished and deleted by retention), made by this very call (a
 * dependency must exist before its dependent: no cycle can be built), or living on another shard — a 400
 * naming the first such id's field (`tasks[i].depends_on[k]`). One read of every id, by primary key.
 */
export async function refuseUnknownDependencies(db: Db, rows: InsertRow[], field: TaskField): Promise<void> {
  const wanted: Array<{ i: number; k: number; id: string }> = [];
  for (const row of rows) {
    const ids = row.dependsOn ?? [];
    const remote = new Set((row.remote ?? []).map((r) => r.id));
    if (ids.length > MAX_DEPENDENCIES) {
      throw new EdgeqError(
        "invalid_request",
        `${field(row.i, "depends_on")}: at most ${MAX_DEPENDENCIES} dependencies (got ${ids.length})`,
      );
    }
    // Those on another database were found there by the shard layer (src/shards/remote-dependencies.ts).
    ids.forEach((id, k) => remote.has(id) || wanted.push({ i: row.i, k, id }));
  }
  if (wanted.length === 0) return;
  const ids = JSON.stringify([...new Set(wanted.map((w) => w.id))]);
  const found = new Set(
    (await db.all<{ id: string }>(sql`SELECT t.id FROM json_each(${ids}) AS d JOIN tasks t ON t.id = d.value`)).map(
      (r) => r.id,
    ),
  );
  // Those that are no row may be tasks of the pack layout (src/engine/packs/): read only when some id is no row.
  const notRows = [...new Set(wanted.map((w) => w.id))].filter((id) => !found.has(id));
  if (notRows.length > 0) {
    const packTasks = await db.all<{
      id: string;
    }>(sql`SELECT d.value AS id FROM json_each(${JSON.stringify(notRows)}) AS d
      WHERE ${packSlotCharSql(sql`d.value`)} IS NOT NULL`);
    for (const r of packTasks) found.add(r.id);
  }
  const missing = wanted.find((w) => !found.has(w.id));
  if (missing) {
    throw new EdgeqError(
      "invalid_request",
      `${field(missing.i, `depends_on[${missing.k}]`)}: no task ${missing.id} to depend on here (unknown, pruned, made by this call, or on another shard)`,
    );
  }
}

/**
 * The dependents that the finishing of the items (`fencesJson`: the ack's `{ id }`s) settled at `now`, read
 * last in the ack's batch for the effects owner (a released one's queue is woken, each one's event
 * published): each dependent of an item whose edge now has an outcome and that changed state at `now` — and,
 * down a cascade, the dependents of each dependent the finish ended (dead or cancelled by its policy), which
 * the trigger of migration 0016 settled in the same statement: one of those released (policy continue) has
 * a queue to wake too. Each is reported under the item whose finish reached it (`by_id`). One primary-key
 * probe of task_edges per item, and one per ended dependent: a task without dependents reads nothing more.
 * A dependent on another database whose settlement the finish (or the cascade) made owed is reported `remote`
 * (still waiting there): the effects owner delivers it (src/shards/remote-settlements.ts).
 *
 * Every join is a CROSS JOIN, which SQLite never reorders: the walk (a handful of ids) drives each probe by
 * primary key. With a plain JOIN, once the database has statistics (ANALYZE, `PRAGMA optimize`) the planner
 * chose to scan all of `tasks` against a Bloom filter of the walk, and `remote_edges` by its owed index:
 * every ack read the whole table (measured in workerd: 20,005 to 70,302 rows per completion as it grew).
 */
export function settledDependentsSql(fencesJson: string | SQL, now: number): SQL {
  return sql`WITH RECURSIVE walk(by_id, id, ended) AS (
      SELECT j.value->>'id', j.value->>'id', 1 FROM json_each(${fencesJson}) AS j
      UNION
      SELECT w.by_id, t.id, t.state IN ('dead', 'cancelled')
      FROM walk w CROSS JOIN task_edges e ON e.dependency = w.id AND e.outcome IS NOT NULL
        CROSS JOIN tasks t ON t.id = e.dependent
      WHERE w.ended AND t.updated_at = ${now} AND t.state IN ('pending', 'dead', 'cancelled')
    )
    SELECT w.by_id, t.id, t.queue, t.state, t.run_at, NULL AS remote
    FROM walk w CROSS JOIN tasks t ON t.id = w.id WHERE w.id <> w.by_id
    UNION ALL
    SELECT w.by_id, r.dependent, r.dependent_queue, 'waiting', 0, 1
    FROM walk w CROSS JOIN remote_edges r ON r.dependency = w.id AND r.outcome IS NOT NULL AND r.delivered_at IS NULL
    WHERE w.ended`;
}

/**
 * The dependents that `ids` finishing at `now` settled, read after a write that reports no dependents of its
 * own (a cancel, the reaper) for the effects owner: released ones are woken and published `ready`, ended
 * ones `dead` or `cancelled`. One primary-key probe of task_edges per id (a task nobody waits on reads
 * nothing more). A dependent already leased again since is not reported: its lease found it.
 *
 * @example
 * const dependents = await readSettledDependents(db, cancelledIds, now);
 */
export async function readSettledDependents(db: Db, ids: string[], now: number): Promise<SettledDependent[]> {
  if (ids.length === 0) return [];
  const rows = await db.all<SettledDependent & { by_id: string }>(
    settledDependentsSql(JSON.stringify(ids.map((id) => ({ id }))), now),
  );
  const seen = new Set<string>();
  return rows.flatMap(({ id, queue, state, run_at, remote }) => {
    if (seen.has(id)) return []; // settled by several of the ids: reported once
    seen.add(id);
    return [{ id, queue, state, run_at, ...(remote ? { remote: true } : {}) }];
  });
}
