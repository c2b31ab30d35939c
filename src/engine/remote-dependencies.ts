import { sql, type SQL } from "drizzle-orm";
import { batchAll, type Db } from "../db/client";
import { NotFoundError } from "../contracts/errors";
import type { TaskState } from "../contracts/states";
import type { SettledDependent } from "./ack";
import { packSlotCharSql } from "./packs/pack-task-sql";

/**
 * Dependencies across databases: a dependent whose dependency lives on another D1 database (another shard,
 * or another partition's). No transaction spans two databases, so each end keeps its half (migrations/0018):
 *
 * - the dependency's database, an outbox: `remote_edges` (dependency → dependent, and the dependent's queue).
 *   The trigger `tasks_owe_remote_settlements` gives an edge its outcome in the very statement that finishes
 *   the dependency (a completion, a failure, the reaper, a cancel, an expiry, a cascade), so a finish never
 *   happens without its settlement being owed. A settlement owed is delivered, then deleted.
 * - the dependent's database: `remote_waits` (dependent ← dependency), counted in the dependent's
 *   `waiting_on` while its outcome is null. A delivery (`settleRemoteWait`) counts it off — releasing the
 *   dependent at zero, or ending it as its policy says, which cascades to its own dependents through the
 *   local trigger — and sets the outcome, in one batch, only while the outcome is null: the fence that makes
 *   a delivery repeated after a crash (between the settle and the outbox's delete) change nothing.
 *
 * Who delivers, and where the dependent is at that moment, is the shard layer's business
 * (src/shards/remote-settlements.ts); the statements are here.
 */

/** A dependency on another database as the dependent's enqueue is told of it: `outcome` null while it is
 * unfinished (its edge there will deliver it), else the final state it had (or `pruned`), counted at once. */
export interface RemoteDependency {
  id: string;
  outcome: string | null;
}

/** An edge to write on the dependency's database: its dependent elsewhere, in `dependentQueue`. */
export interface RemoteEdgeSpec {
  dependency: string;
  dependent: string;
  dependentQueue: string;
}

/** A dependency's state as its database answered the edge's write: `finished` when it had finished (then no
 * edge was written: the dependent counts it at once). */
export interface RemoteDependencyState {
  state: TaskState;
  finished: boolean;
}

/** A settlement owed: the dependency finished as `outcome`; its dependent has not been told yet. */
export interface OwedSettlement {
  dependency: string;
  dependent: string;
  dependentQueue: string;
  outcome: string;
  finishedAt: number;
  createdAt: number;
}

/** What a delivery tells the dependent's database. */
export interface Settlement {
  dependency: string;
  dependent: string;
  outcome: string;
}

/** The states that make `fail` and `cancel` end a dependent. */
const FAILED = ["dead", "cancelled", "expired"];

/**
 * The fields a row with remote dependencies adds to its insert JSON (all omitted without any, so a plain
 * row's JSON is as before): the waits to write, how many are unfinished (added to `waiting_on`), and the
 * first that failed (what ends it under `fail` and `cancel`, as a local failed dependency does).
 */
export function remoteRowFields(remote: RemoteDependency[] | null): Record<string, unknown> {
  if (!remote) return {};
  const failed = remote.find((r) => r.outcome !== null && FAILED.includes(r.outcome));
  return {
    remote_waits: remote,
    remote_live: remote.filter((r) => r.outcome === null).length,
    remote_failed_by: failed ? `${failed.id} ended ${failed.outcome}` : undefined,
  };
}

/**
 * The `remote_waits` of a chunk's dependents, run after its insert and before its edges in the same batch:
 * one row per remote dependency of each row the insert created (created now: a deduplicated row writes none).
 */
export function remoteWaitsSql(
  chunk: Array<{ id: string; remote: RemoteDependency[] | null }>,
  now: number,
): SQL | null {
  const rows = chunk.filter((r) => r.remote !== null).map((r) => ({ id: r.id, waits: r.remote }));
  if (rows.length === 0) return null;
  return sql`INSERT INTO remote_waits (dependent, dependency, outcome)
    SELECT t.id, w.value->>'id', w.value->>'outcome'
    FROM json_each(${JSON.stringify(rows)}) AS j
      JOIN tasks t ON t.id = j.value->>'id' AND t.created_at = ${now} AND t.depends_on IS NOT NULL
      JOIN json_each(j.value->'waits') AS w
    WHERE true
    ON CONFLICT DO NOTHING`;
}

/**
 * Writes, on the dependencies' database, the edges of dependents elsewhere — for the dependencies still
 * unfinished — and answers each dependency's state as of that write (one batch: a dependency finishing right
 * after finds its edge and owes the settlement; one finished before has none, and the dependent counts it at
 * once). A dependency missing from the answer is not here (never was, pruned, or moved meanwhile).
 *
 * @example
 * const states = await recordRemoteEdges(db, [{ dependency: x, dependent: d, dependentQueue: "joins" }], now);
 */
export async function recordRemoteEdges(
  db: Db,
  edges: RemoteEdgeSpec[],
  now: number,
): Promise<Map<string, RemoteDependencyState>> {
  if (edges.length === 0) return new Map();
  const json = JSON.stringify(edges);
  const ids = JSON.stringify([...new Set(edges.map((e) => e.dependency))]);
  const [, found = []] = await batchAll<{ id: string; state: TaskState; finished: number }>(db, [
    sql`INSERT INTO remote_edges (dependency, dependent, dependent_queue, created_at)
      SELECT e.value->>'dependency', e.value->>'dependent', e.value->>'dependentQueue', ${now}
      FROM json_each(${json}) AS e JOIN tasks t ON t.id = e.value->>'dependency' AND t.finished_at IS NULL
      WHERE true
      ON CONFLICT DO NOTHING`,
    sql`SELECT t.id, t.state, t.finished_at IS NOT NULL AS finished FROM json_each(${ids}) AS d
      JOIN tasks t ON t.id = d.value`,
  ]);
  return new Map(found.map((r) => [r.id, { state: r.state, finished: Boolean(r.finished) }]));
}

/**
 * Up to `limit` settlements owed (edges whose dependency finished, not yet delivered), oldest finish first:
 * read through the partial index `remote_edges_owed`, which holds those and nothing else.
 *
 * @example
 * for (const owed of await owedSettlements(db, 100)) await deliver(owed);
 */
export async function owedSettlements(db: Db, limit: number): Promise<OwedSettlement[]> {
  return db.all<OwedSettlement>(sql`SELECT dependency, dependent, dependent_queue AS dependentQueue, outcome,
      finished_at AS finishedAt, created_at AS createdAt
    FROM remote_edges WHERE outcome IS NOT NULL AND delivered_at IS NULL ORDER BY finished_at LIMIT ${limit}`);
}

/**
 * Marks delivered settlements delivered at `now`: out of the owed index, kept for the dependency's dependents
 * page until the retention prune deletes the dependency (src/engine/purge.ts); one whose dependency is gone
 * already (pruned while its settlement was owed) is deleted instead, as nothing would prune it later. The
 * dependency may be a row or a task of a pack (src/engine/packs/): both layouts share these edges. Returns
 * how many this call took off the owed list (a repeated call: 0).
 *
 * @example
 * await dropSettlements(db, [{ dependency: x, dependent: d }], now);
 */
export async function dropSettlements(
  db: Db,
  edges: Array<{ dependency: string; dependent: string }>,
  now: number,
): Promise<number> {
  if (edges.length === 0) return 0;
  const owed = sql`(dependency, dependent) IN (
      SELECT e.value->>'dependency', e.value->>'dependent' FROM json_each(${JSON.stringify(edges)}) AS e)
    AND outcome IS NOT NULL AND delivered_at IS NULL`;
  const [marked = [], deleted = []] = await batchAll<{ one: number }>(db, [
    sql`UPDATE remote_edges SET delivered_at = ${now}
      WHERE ${owed} AND (EXISTS (SELECT 1 FROM tasks t WHERE t.id = remote_edges.dependency)
        OR ${packSlotCharSql(sql`remote_edges.dependency`)} IS NOT NULL) RETURNING 1 AS one`,
    sql`DELETE FROM remote_edges WHERE ${owed} RETURNING 1 AS one`,
  ]);
  return marked.length + deleted.length;
}

/**
 * Tells the dependent's database that a dependency elsewhere finished as `outcome`, at `now`: one batch that
 * counts the wait off (releasing the dependent at zero: pending at the run time it asked for, or now), or
 * ends the dependent under `fail` / `cancel` when the dependency failed (its finish fires the local trigger,
 * so its own dependents here are settled in the same statement and its own remote edges owe theirs), then
 * gives the wait its outcome. Every statement holds only while the wait has no outcome, and the last one
 * gives it one: a repeated delivery changes nothing. Answers the dependent as this delivery left it when it
 * changed it (null otherwise: already counted, cancelled, ...); `not_found` when the dependent is not here.
 *
 * @example
 * const released = await settleRemoteWait(db, { dependency: x, dependent: d, outcome: "completed" }, now);
 */
export async function settleRemoteWait(db: Db, s: Settlement, now: number): Promise<SettledDependent | null> {
  const open = sql`EXISTS (SELECT 1 FROM remote_waits w WHERE w.dependent = ${s.dependent}
    AND w.dependency = ${s.dependency} AND w.outcome IS NULL)`;
  const failed = FAILED.includes(s.outcome);
  const ends = sql`on_dependency_failure IN ('fail', 'cancel')`;
  const statements: SQL[] = [
    sql`SELECT id FROM tasks WHERE id = ${s.dependent}`,
    // Counted off: released at zero.
    sql`UPDATE tasks SET
        waiting_on = waiting_on - 1,
        state = CASE WHEN waiting_on - 1 <= 0 THEN 'pending' ELSE 'waiting' END,
        run_at = CASE WHEN waiting_on - 1 <= 0 THEN max(coalesce(ready_at, 0), ${now}) ELSE run_at END,
        priority = CASE WHEN waiting_on - 1 <= 0 THEN coalesce(ready_priority, priority) ELSE priority END,
        updated_at = ${now}
      WHERE id = ${s.dependent} AND state = 'waiting' AND ${failed ? sql`NOT ${ends}` : sql`true`} AND ${open}`,
  ];
  if (failed) {
    // Ended by the failure, naming it; `waiting_on` still counts this wait, so the local trigger settles its
    // own dependents (it skips a task ended with waiting_on 0: a cascade's own mark). Then zeroed, as a
    // local cascade leaves an ended dependent.
    statements.push(
      sql`UPDATE tasks SET
          state = CASE WHEN on_dependency_failure = 'cancel' THEN 'cancelled' ELSE 'dead' END,
          finished_at = ${now}, updated_at = ${now},
          run_at = coalesce(ready_at, run_at), priority = coalesce(ready_priority, priority),
          errors = json_insert(errors, '$[#]', json_object('attempt', attempts, 'at', ${now},
            'message', ${`dependency ${s.dependency} ended ${s.outcome}`}, 'kind', 'dependency'))
        WHERE id = ${s.dependent} AND state = 'waiting' AND ${ends} AND ${open}`,
      sql`UPDATE tasks SET waiting_on = 0
        WHERE id = ${s.dependent} AND finished_at = ${now} AND waiting_on > 0 AND ${open}`,
    );
  }
  statements.push(
    sql`UPDATE remote_waits SET outcome = ${s.outcome}
      WHERE dependent = ${s.dependent} AND dependency = ${s.dependency} AND outcome IS NULL
      RETURNING dependent`,
    // The dependent as this batch left it, when the batch changed it (one already cancelled stays unreported).
    sql`SELECT id, queue, state, run_at FROM tasks WHERE id = ${s.dependent} AND updated_at = ${now}`,
  );
  const results = await batchAll<Record<string, unknown>>(db, statements);
  if ((results[0] ?? []).length === 0) throw new NotFoundError(`task ${s.dependent}`);
  const counted = (results.at(-2) ?? []).length > 0;
  const task = (results.at(-1) ?? [])[0] as SettledDependent | undefined;
  if (!counted || !task || !["pending", "dead", "cancelled"].includes(task.state)) return null;
  return { id: task.id, queue: task.queue, state: task.state, run_at: task.run_at };
}

/**
 * The remote waits of a dependent, as its dependencies page shows them (their state lives elsewhere): each
 * dependency's outcome once delivered.
 *
 * @example
 * const waits = await listRemoteWaits(db, joinId);
 */
export async function listRemoteWaits(db: Db, dependent: string): Promise<RemoteDependency[]> {
  return db.all<RemoteDependency>(
    sql`SELECT dependency AS id, outcome FROM remote_waits WHERE dependent = ${dependent} ORDER BY dependency`,
  );
}
