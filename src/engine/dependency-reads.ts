import { sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { NotFoundError } from "../contracts/errors";
import { MAX_INLINE_DEPENDENCY_RESULT_BYTES } from "../contracts/limits";
import type { DependencyEntry, DependencyPage, DependentEntry } from "../contracts/dependency-page";
import type { TaskState } from "../contracts/states";
import { utf8Bytes } from "../contracts/json-value";
import { locateTasks } from "./packs/locate";
import { slotState } from "./packs/slot-rules";

export type { DependencyEntry, DependencyPage, DependentEntry } from "../contracts/dependency-page";

/** A dependent as its dependency's store knows it: one here, or one on another database (`remote`), found
 * from the dependency's outbox (remote_edges), whose type and state live there. */
export type StoredDependent =
  | (DependentEntry & { remote?: undefined })
  | { id: string; queue: string; type: null; state: null; outcome: string | null; remote: true };

/**
 * A page of a task's dependencies in id order, after `cursor`, each with its state and (bounded) result:
 * what a join reads of its children. Read from the dependent's own `depends_on` and each dependency by
 * primary key. Throws `not_found` for an unknown task.
 *
 * @example
 * const { entries, nextCursor } = await listDependencies(db, joinId, { limit: 100 });
 */
export async function listDependencies(
  db: Db,
  id: string,
  page: { cursor?: string; limit: number },
): Promise<DependencyPage<DependencyEntry>> {
  const task = await db.get<{ depends_on: string | null }>(sql`SELECT depends_on FROM tasks WHERE id = ${id}`);
  if (!task) throw new NotFoundError(`task ${id}`);
  const rows = await db.all<{
    id: string;
    queue: string | null;
    type: string | null;
    state: TaskState | null;
    result: string | null;
    result_bytes: number | null;
  }>(sql`SELECT d.value AS id, t.queue, t.type, t.state,
      CASE WHEN length(CAST(t.result AS BLOB)) <= ${MAX_INLINE_DEPENDENCY_RESULT_BYTES} THEN t.result END AS result,
      length(CAST(t.result AS BLOB)) AS result_bytes
    FROM json_each(${task.depends_on ?? "[]"}) AS d LEFT JOIN tasks t ON t.id = d.value
    WHERE d.value > ${page.cursor ?? ""}
    ORDER BY d.value LIMIT ${page.limit + 1}`);
  const entries: DependencyEntry[] = rows.slice(0, page.limit).map((r) => ({
    id: r.id,
    queue: r.queue,
    type: r.type,
    state: r.state,
    result: r.result,
    resultBytes: r.result_bytes,
  }));
  await fillPackDependencies(db, entries);
  return { entries, nextCursor: rows.length > page.limit ? entries.at(-1)!.id : null };
}

/**
 * Fills in the entries that are no row with the pack layout's tasks (src/engine/packs/): a dependency may be
 * a task of a pack, read from its slot (its result with its spill). Reads nothing when every entry is a row.
 */
async function fillPackDependencies(db: Db, entries: DependencyEntry[]): Promise<void> {
  const missing = entries.filter((e) => e.queue === null);
  if (missing.length === 0) return;
  const found = await locateTasks(
    db,
    missing.map((e) => e.id),
  );
  for (const entry of missing) {
    const at = found.get(entry.id);
    if (!at) continue;
    const result = at.slot.body.r === undefined ? null : JSON.stringify(at.slot.body.r);
    const bytes = result === null ? null : utf8Bytes(result);
    entry.queue = at.pack.queue;
    entry.type = at.pack.type;
    entry.state = slotState(at.slot);
    entry.result = bytes !== null && bytes <= MAX_INLINE_DEPENDENCY_RESULT_BYTES ? result : null;
    entry.resultBytes = bytes;
  }
}

/**
 * A page of a task's dependents (the tasks that wait or waited for it) in id order, after `cursor`: those on
 * this database from task_edges, those on others from its outbox (remote_edges, `remote`, their type and state
 * left to the shard layer to read where they live) — each a prefix of its table's primary key, at most a page
 * from each. Throws `not_found` for an unknown task.
 *
 * @example
 * const { entries } = await listDependents(db, childId, { limit: 100 });
 */
export async function listDependents(
  db: Db,
  id: string,
  page: { cursor?: string; limit: number },
): Promise<DependencyPage<StoredDependent>> {
  const task = await db.get<{ id: string }>(sql`SELECT id FROM tasks WHERE id = ${id}`);
  if (!task) throw new NotFoundError(`task ${id}`);
  return dependentsPage(db, id, page);
}

/**
 * The page of `listDependents` for a task known to exist, whichever its layout (the edges name it by id: a
 * row, or a task of a pack, src/engine/packs/dependency-targets.ts).
 */
export async function dependentsPage(
  db: Db,
  id: string,
  page: { cursor?: string; limit: number },
): Promise<DependencyPage<StoredDependent>> {
  const after = page.cursor ?? "";
  const rows = await db.all<Omit<StoredDependent, "remote"> & { remote: number }>(sql`SELECT * FROM (
      SELECT * FROM (SELECT t.id, t.queue, t.type, t.state, e.outcome, 0 AS remote
        FROM task_edges e JOIN tasks t ON t.id = e.dependent
        WHERE e.dependency = ${id} AND e.dependent > ${after} ORDER BY e.dependent LIMIT ${page.limit + 1})
      UNION ALL
      SELECT * FROM (SELECT dependent, dependent_queue, NULL, NULL, outcome, 1 FROM remote_edges
        WHERE dependency = ${id} AND dependent > ${after} ORDER BY dependent LIMIT ${page.limit + 1})
    ) ORDER BY id LIMIT ${page.limit + 1}`);
  const entries = rows
    .slice(0, page.limit)
    .map(({ remote, ...entry }) => (remote ? { ...entry, remote: true } : entry) as StoredDependent);
  return { entries, nextCursor: rows.length > page.limit ? entries.at(-1)!.id : null };
}
