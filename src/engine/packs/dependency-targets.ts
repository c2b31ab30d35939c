import { sql } from "drizzle-orm";
import { batchAll, type Db } from "../../db/client";
import { EdgeqError, NotFoundError } from "../../contracts/errors";
import type { TaskState } from "../../contracts/states";
import type { SettledDependent } from "../ack";
import { readSettledDependents } from "../dependencies";
import { dependentsPage, type DependencyEntry, type DependencyPage, type StoredDependent } from "../dependency-reads";
import type { FanOutResult } from "../fan-out";
import type { RemoteDependency, RemoteDependencyState, RemoteEdgeSpec, Settlement } from "../remote-dependencies";
import { locateTasks } from "./locate";
import { packSlotCharSql, slotCharFinishedSql, slotCharStateSql } from "./pack-task-sql";

/**
 * A pack task as a dependency TARGET (docs/design/packs.md, "Dependencies across the two layouts"): a row task
 * may depend on it (`depends_on` naming it, or a fan-in's join waiting on it), here or on another database,
 * and it settles them exactly as a row task does — in the batch of whatever finishes it (pack-commit.ts
 * `packWriteSql`, settle-dependents.ts), reported to the effects owner as the row store reports them. The
 * edges are the row layout's own tables (`task_edges`, `remote_edges`), which name a task by id whatever
 * its layout.
 *
 * A pack task itself never waits: `depends_on` at a pack enqueue is refused (enqueue.ts), and the
 * dependent's half of the port has nothing to act on here — `enqueueFanOut` is refused, a pack task's
 * dependencies are none, it has no remote waits, and no settlement is for a dependent here. Those answers
 * are the pack store's true ones (the served hybrid sends a waiting task to rows), not emulations.
 */

/** Throws `not_found` unless a pack task has this id. */
async function assertPackTask(db: Db, id: string): Promise<void> {
  if (!(await locateTasks(db, [id])).has(id)) throw new NotFoundError(`task ${id}`);
}

/** A page of the tasks that depend on a pack task (rows here, and dependents elsewhere it owes or owed a
 * settlement), as the row store's `listDependents`. `not_found` for an id that is no pack task. */
export async function listPackDependents(
  db: Db,
  id: string,
  page: { cursor?: string; limit: number },
): Promise<DependencyPage<StoredDependent>> {
  await assertPackTask(db, id);
  return dependentsPage(db, id, page);
}

/** A pack task's dependencies: none (a pack task never waits). `not_found` for an id that is no pack task. */
export async function listPackDependencies(db: Db, id: string): Promise<DependencyPage<DependencyEntry>> {
  await assertPackTask(db, id);
  return { entries: [], nextCursor: null };
}

/** The dependents that `ids` finishing at `now` settled: the row store's read, over the same edge tables. */
export function packSettledDependents(db: Db, ids: string[], now: number): Promise<SettledDependent[]> {
  return readSettledDependents(db, ids, now);
}

/** Refused: a fan-out's join waits on its children, and the pack store keeps no waiting task. */
export function refusePackFanOut(): Promise<FanOutResult> {
  return Promise.reject(
    new EdgeqError(
      "invalid_request",
      "join: a fan-out's join waits on its children, and the pack store keeps no waiting task (the served store enqueues a fan-out as rows)",
    ),
  );
}

/**
 * Writes, for the pack tasks among `edges`' dependencies still unfinished, the edges of their dependents on
 * other databases, and answers each pack task's state as of that write — one batch, as the row store's
 * `recordRemoteEdges`: a pack write finishing one after it finds the edge (its batch settles it,
 * settle-dependents.ts), one before it leaves none (the dependent counts it at once). A dependency that is no
 * pack task is missing from the answer.
 */
export async function recordPackRemoteEdges(
  db: Db,
  edges: RemoteEdgeSpec[],
  now: number,
): Promise<Map<string, RemoteDependencyState>> {
  if (edges.length === 0) return new Map();
  const ids = JSON.stringify([...new Set(edges.map((e) => e.dependency))]);
  const [, found = []] = await batchAll<{ id: string; state: TaskState; finished: number }>(db, [
    sql`INSERT INTO remote_edges (dependency, dependent, dependent_queue, created_at)
      SELECT e.value->>'dependency', e.value->>'dependent', e.value->>'dependentQueue', ${now}
      FROM json_each(${JSON.stringify(edges)}) AS e
      WHERE ${packSlotCharSql(sql`e.value->>'dependency'`)} IN ('p', 'w', 'r')
      ON CONFLICT DO NOTHING`,
    sql`SELECT id, ${slotCharStateSql(sql`c`)} AS state, ${slotCharFinishedSql(sql`c`)} AS finished
      FROM (SELECT d.value AS id, ${packSlotCharSql(sql`d.value`)} AS c FROM json_each(${ids}) AS d) WHERE c IS NOT NULL`,
  ]);
  return new Map(found.map((r) => [r.id, { state: r.state, finished: Boolean(r.finished) }]));
}

/** No settlement is for a dependent here (a pack task never waits): `not_found`, as the row store answers a
 * dependent it does not hold. */
export function settlePackRemoteWait(s: Settlement): Promise<SettledDependent | null> {
  return Promise.reject(new NotFoundError(`task ${s.dependent}`));
}

/** A pack task's dependencies on other stores: none (it never waits), as the row store answers a task without. */
export function listPackRemoteWaits(): Promise<RemoteDependency[]> {
  return Promise.resolve([]);
}
