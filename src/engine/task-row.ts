import { getTableColumns, sql } from "drizzle-orm";
import { tasks, type TaskRow } from "../db/schema";
import type { LeasedTaskView, TaskErrorEntry, TaskView } from "../contracts/task";
import type { StoredTask } from "../contracts/stored-task";

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
