import { getTableColumns, sql } from "drizzle-orm";
import { tasks, type TaskRow } from "../db/schema";
import type { ChildTaskSpec, LeasedTaskView, TaskErrorEntry, TaskView } from "../contracts/task";
import type { TaskState } from "../contracts/states";
import type { StoredTask } from "../contracts/stored-task";
import { toIso } from "./time";

/** snake_case column name -> camelCase key, for rows read with raw SQL (`RETURNING *`). */
const KEY_BY_COLUMN = new Map(Object.entries(getTableColumns(tasks)).map(([key, column]) => [column.name, key]));

export type { LeasedTaskView, TaskErrorEntry, TaskView };

/** Both ways assignable: the same keys, of the same types. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Holds<T extends true> = T;

/** A stored row is a StoredTask field for field (its state a column of text, a TaskState in the domain): a
 * column added to the schema without its field in src/engine/stored-task.ts does not compile. */
export type RowIsStoredTask = Holds<Same<Omit<TaskRow, "state">, Omit<StoredTask, "state">>>;

/** A row read with Drizzle's query builder, as the domain task it is (the same object, not a copy). */
export function storedTask(row: TaskRow): StoredTask {
  return row as StoredTask;
}

/** Maps a raw row (column names as keys) to the task it stores. */
export function rowFromRaw(raw: Record<string, unknown>): StoredTask {
  const row: Record<string, unknown> = {};
  for (const [column, value] of Object.entries(raw)) row[KEY_BY_COLUMN.get(column) ?? column] = value;
  return row as unknown as StoredTask;
}

function parseJson(text: string | null): unknown {
  return text == null ? null : JSON.parse(text);
}

/** The stored JSON columns of the view: parsed by toTaskView, spliced in as text by leasedTaskJson. */
type StoredJsonFields = "payload" | "result" | "checkpoint" | "then";

/** How many ids a stored `depends_on` array holds (null: none), without parsing it: ids are ULIDs (no commas
 * in them), so one more than its commas — a join's array may hold 10,000 of them, and a page of views reads
 * many. `json_array_length` in the SQL view below; test/engine/task-row.test.ts holds the two equal. */
function dependencyCount(dependsOn: string | null): number | null {
  if (dependsOn === null) return null;
  let commas = 0;
  for (let at = dependsOn.indexOf(","); at !== -1; at = dependsOn.indexOf(",", at + 1)) commas++;
  return commas + 1;
}

/** Every field of the view but the stored JSON ones. */
function plainFields(row: TaskRow): Omit<TaskView, StoredJsonFields> {
  const errors = (parseJson(row.errors) as Array<Omit<TaskErrorEntry, "at"> & { at: number }>) ?? [];
  return {
    id: row.id,
    queue: row.queue,
    type: row.type,
    state: row.state as TaskState,
    priority: row.state === "waiting" ? (row.readyPriority ?? row.priority) : row.priority,
    errors: errors.map((e) => ({ ...e, at: toIso(e.at) })),
    attempts: row.attempts,
    max_attempts: row.maxAttempts,
    // A waiting task's run_at is WAITING_RUN_AT (src/engine/dependencies.ts): shown as the time it asked for.
    run_at: toIso(row.state === "waiting" ? (row.readyAt ?? row.runAt) : row.runAt),
    lease_holder: row.leaseHolder,
    lease_expires_at: toIso(row.leaseExpiresAt),
    claim_by: toIso(row.claimBy),
    cancel_requested: row.cancelRequested === 1,
    dedupe_key: row.dedupeKey,
    group: row.groupKey,
    key: row.flowKey,
    progress: row.progress,
    progress_message: row.progressMessage,
    created_at: toIso(row.createdAt),
    updated_at: toIso(row.updatedAt),
    started_at: toIso(row.startedAt),
    finished_at: toIso(row.finishedAt),
    waiting_on: row.waitingOn,
    dependency_count: dependencyCount(row.dependsOn),
    on_dependency_failure: row.onDependencyFailure as TaskView["on_dependency_failure"],
    start_by: toIso(row.startBy),
  };
}

/** Renders a stored row for the API. */
export function toTaskView(row: TaskRow): TaskView {
  return {
    ...plainFields(row),
    payload: parseJson(row.payload),
    result: parseJson(row.result),
    checkpoint: parseJson(row.checkpoint),
    then: parseJson(row.thenTasks) as ChildTaskSpec[] | null,
  };
}

/**
 * A leased task's view (toLeasedTaskView) as JSON text: the stored JSON columns (payload, result,
 * checkpoint, then — valid JSON text, written by SQLite's JSON functions) are spliced in as they are
 * instead of parsed and serialised again, so a payload of up to 1 MiB is never parsed on the way out. The
 * long poll's answer; a direct lease's views are rendered by SQLite (`leasedViewJsonSql`).
 */
export function leasedTaskJson(row: TaskRow): string {
  if (row.leaseToken == null) throw new Error(`task ${row.id} was returned by a lease without a token`);
  const plain = JSON.stringify({ ...plainFields(row), lease_token: row.leaseToken });
  const raw = (text: string | null) => text ?? "null";
  return `${plain.slice(0, -1)},"payload":${raw(row.payload)},"result":${raw(row.result)},"checkpoint":${raw(
    row.checkpoint,
  )},"then":${raw(row.thenTasks)}}`;
}

/** A stored time (ms, SQL) rendered by SQLite as toIso renders it: `2026-11-23T03:48:30.123Z`, or NULL. The
 * `unixepoch` modifier rounds the seconds back to whole milliseconds, so no float error shows in `%f`. */
function isoSql(ms: string): string {
  return `strftime('%Y-%m-%dT%H:%M:%fZ', ${ms} / 1000.0, 'unixepoch')`;
}

/**
 * toLeasedTaskView as SQL over a task row, for a RETURNING clause: the view's JSON text, built by SQLite
 * (the same fields as plainFields, then lease_token, then the stored JSON columns spliced in as stored:
 * the object's closing brace is trimmed first — its last value, the token, is a string or null, so
 * exactly one brace goes).
 * test/engine/task-row.test.ts holds the two to the same output.
 */
export const leasedViewJsonSql = sql.raw(`(rtrim(json_object(
    'id', id, 'queue', queue, 'type', type, 'state', state, 'priority', priority,
    'errors', json((SELECT json_group_array(json_set(e.value, '$.at', ${isoSql("e.value->>'at'")}))
      FROM json_each(errors) AS e)),
    'attempts', attempts, 'max_attempts', max_attempts, 'run_at', ${isoSql("run_at")},
    'lease_holder', lease_holder, 'lease_expires_at', ${isoSql("lease_expires_at")}, 'claim_by', ${isoSql("claim_by")},
    'cancel_requested', json(CASE WHEN cancel_requested = 1 THEN 'true' ELSE 'false' END),
    'dedupe_key', dedupe_key, 'group', group_key, 'key', flow_key, 'progress', progress, 'progress_message', progress_message,
    'created_at', ${isoSql("created_at")}, 'updated_at', ${isoSql("updated_at")},
    'started_at', ${isoSql("started_at")}, 'finished_at', ${isoSql("finished_at")},
    'waiting_on', waiting_on, 'dependency_count', json_array_length(depends_on),
    'on_dependency_failure', on_dependency_failure,
    'start_by', ${isoSql("start_by")}, 'lease_token', lease_token), '}')
  || ',"payload":' || coalesce(payload, 'null') || ',"result":' || coalesce(result, 'null')
  || ',"checkpoint":' || coalesce(checkpoint, 'null') || ',"then":' || coalesce(then_tasks, 'null') || '}')`);

/** Renders a freshly leased row, with the token its holder must present. */
export function toLeasedTaskView(row: TaskRow): LeasedTaskView {
  if (row.leaseToken == null) throw new Error(`task ${row.id} was returned by a lease without a token`);
  return { ...toTaskView(row), lease_token: row.leaseToken };
}
