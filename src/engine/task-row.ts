import { getTableColumns } from "drizzle-orm";
import { tasks, type TaskRow } from "../db/schema";
import type { ChildTaskSpec } from "./enqueue";
import type { TaskState } from "./states";
import { toIso } from "./time";

/** snake_case column name -> camelCase key, for rows read with raw SQL (`RETURNING *`). */
const KEY_BY_COLUMN = new Map(Object.entries(getTableColumns(tasks)).map(([key, column]) => [column.name, key]));

/** Maps a raw row (column names as keys) to the typed row Drizzle's query builder returns. */
export function rowFromRaw(raw: Record<string, unknown>): TaskRow {
  const row: Record<string, unknown> = {};
  for (const [column, value] of Object.entries(raw)) row[KEY_BY_COLUMN.get(column) ?? column] = value;
  return row as TaskRow;
}

/** One entry of a task's error history. */
export interface TaskErrorEntry {
  attempt: number;
  at: string;
  message: string;
  /** error: retryable failure; permanent: non-retryable failure; lease_expired: the holder went silent. */
  kind: "error" | "permanent" | "lease_expired";
}

/** A task as the API shows it: snake_case fields, ISO-8601 UTC times, JSON parsed. */
export interface TaskView {
  id: string;
  queue: string;
  type: string;
  state: TaskState;
  priority: number;
  payload: unknown;
  result: unknown;
  errors: TaskErrorEntry[];
  attempts: number;
  max_attempts: number;
  run_at: string;
  lease_holder: string | null;
  lease_expires_at: string | null;
  /** A provisional lease's claim deadline (ISO), or null. */
  claim_by: string | null;
  cancel_requested: boolean;
  dedupe_key: string | null;
  group: string | null;
  progress: number | null;
  progress_message: string | null;
  created_at: string;
  updated_at: string;
  started_at: string | null;
  finished_at: string | null;
  checkpoint: unknown;
  then: ChildTaskSpec[] | null;
}

export interface LeasedTaskView extends TaskView {
  lease_token: string;
}

function parseJson(text: string | null): unknown {
  return text == null ? null : JSON.parse(text);
}

/** Renders a stored row for the API. */
export function toTaskView(row: TaskRow): TaskView {
  const errors = (parseJson(row.errors) as Array<Omit<TaskErrorEntry, "at"> & { at: number }>) ?? [];
  return {
    id: row.id,
    queue: row.queue,
    type: row.type,
    state: row.state as TaskState,
    priority: row.priority,
    payload: parseJson(row.payload),
    result: parseJson(row.result),
    errors: errors.map((e) => ({ ...e, at: toIso(e.at) })),
    attempts: row.attempts,
    max_attempts: row.maxAttempts,
    run_at: toIso(row.runAt),
    lease_holder: row.leaseHolder,
    lease_expires_at: toIso(row.leaseExpiresAt),
    claim_by: toIso(row.claimBy),
    cancel_requested: row.cancelRequested === 1,
    dedupe_key: row.dedupeKey,
    group: row.groupKey,
    progress: row.progress,
    progress_message: row.progressMessage,
    created_at: toIso(row.createdAt),
    updated_at: toIso(row.updatedAt),
    started_at: toIso(row.startedAt),
    finished_at: toIso(row.finishedAt),
    checkpoint: parseJson(row.checkpoint),
    then: parseJson(row.thenTasks) as ChildTaskSpec[] | null,
  };
}

/** Renders a freshly leased row, with the token its holder must present. */
export function toLeasedTaskView(row: TaskRow): LeasedTaskView {
  if (row.leaseToken == null) throw new Error(`task ${row.id} was returned by a lease without a token`);
  return { ...toTaskView(row), lease_token: row.leaseToken };
}
