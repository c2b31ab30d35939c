import { sql } from "drizzle-orm";
import type { Db } from "../db/client";
import type { NewTask } from "../engine/store";
import { NotFoundError } from "../contracts/errors";

/** next_run_at of a schedule whose expression has no slot left: the largest time a Date holds, never due. */
export const NEVER = 8_640_000_000_000_000;

/** The task a schedule enqueues at each slot (validated at PUT by the HTTP schema, again by enqueue). */
export interface ScheduledTask {
  type?: string;
  payload?: unknown;
  priority?: number;
  group?: string;
  key?: string;
  max_attempts?: number;
  dedupe_key?: string;
  /** Each slot's task's start deadline, from its enqueue: not started by then, it ends expired. */
  expires_in_s?: number;
}

/** The task one firing (or trigger) at `now` enqueues: the schedule's task under the id derived from
 * (schedule, slot), due now. Keys of uniqueness over time do not go in a template: a slot's id is already its
 * idempotence, and `overlap: skip` is a singleton's skip. */
export function scheduledTaskInput(task: ScheduledTask, id: string, now: number): NewTask {
  return {
    id,
    type: task.type,
    payload: task.payload,
    priority: task.priority,
    group: task.group,
    key: task.key,
    maxAttempts: task.max_attempts,
    dedupeKey: task.dedupe_key,
    runAt: now,
    startBy: task.expires_in_s === undefined ? undefined : now + Math.round(task.expires_in_s * 1000),
  };
}

/** A schedule as stored (src/db/schema.ts `schedules`), as SQL returns it. */
export interface ScheduleRow {
  name: string;
  queue: string;
  cron: string;
  timezone: string;
  task: string;
  overlap: "allow" | "skip";
  catch_up: "none" | "last" | "all";
  paused: number;
  next_run_at: number;
  last_slot_at: number | null;
  last_task_id: string | null;
  last_outcome: "enqueued" | "skipped_overlap" | "skipped_missed" | "error" | null;
  last_error: string | null;
  created_at: number;
  updated_at: number;
}

export interface ScheduleInput {
  queue: string;
  cron: string;
  timezone: string;
  task: ScheduledTask;
  overlap: "allow" | "skip";
  catch_up: "none" | "last" | "all";
  paused: boolean;
}

/**
 * Creates or replaces a schedule (its expression, task and policies); its history (last slot, task,
 * outcome) is kept across a replace. `nextRunAt` is the first slot after now. One upsert.
 *
 * @example
 * await upsertSchedule(db, "nightly", input, nextRunAt, Date.now());
 */
export async function upsertSchedule(
  db: Db,
  name: string,
  input: ScheduleInput,
  nextRunAt: number,
  now: number,
): Promise<ScheduleRow> {
  const row = await db.get<ScheduleRow>(sql`INSERT INTO schedules
      (name, queue, cron, timezone, task, overlap, catch_up, paused, next_run_at, created_at, updated_at)
    VALUES (${name}, ${input.queue}, ${input.cron}, ${input.timezone}, ${JSON.stringify(input.task)},
      ${input.overlap}, ${input.catch_up}, ${input.paused ? 1 : 0}, ${nextRunAt}, ${now}, ${now})
    ON CONFLICT (name) DO UPDATE SET queue = excluded.queue, cron = excluded.cron, timezone = excluded.timezone,
      task = excluded.task, overlap = excluded.overlap, catch_up = excluded.catch_up, paused = excluded.paused,
      next_run_at = excluded.next_run_at, updated_at = excluded.updated_at
    RETURNING *`);
  return row!;
}

/** One schedule, or `not_found`. */
export async function getSchedule(db: Db, name: string): Promise<ScheduleRow> {
  const row = await db.get<ScheduleRow>(sql`SELECT * FROM schedules WHERE name = ${name}`);
  if (!row) throw new NotFoundError(`schedule ${name}`);
  return row;
}

/** Every schedule, by name. */
export function listSchedules(db: Db): Promise<ScheduleRow[]> {
  return db.all<ScheduleRow>(sql`SELECT * FROM schedules ORDER BY name`);
}

/** Deletes a schedule (its tasks stay), or `not_found`. */
export async function deleteSchedule(db: Db, name: string): Promise<void> {
  const rows = await db.all(sql`DELETE FROM schedules WHERE name = ${name} RETURNING name`);
  if (rows.length === 0) throw new NotFoundError(`schedule ${name}`);
}

/** Pauses or resumes; a resume starts from the first slot after now (`nextRunAt`), not the missed ones. */
export async function setPaused(
  db: Db,
  name: string,
  paused: boolean,
  nextRunAt: number | null,
  now: number,
): Promise<ScheduleRow> {
  const row = await db.get<ScheduleRow>(sql`UPDATE schedules SET paused = ${paused ? 1 : 0},
      next_run_at = coalesce(${nextRunAt}, next_run_at), updated_at = ${now}
    WHERE name = ${name} RETURNING *`);
  if (!row) throw new NotFoundError(`schedule ${name}`);
  return row;
}

/** Schedules due at `now` (not paused), at most `limit`, earliest first. */
export function dueSchedules(db: Db, now: number, limit: number): Promise<ScheduleRow[]> {
  return db.all<ScheduleRow>(
    sql`SELECT * FROM schedules WHERE paused = 0 AND next_run_at <= ${now} ORDER BY next_run_at LIMIT ${limit}`,
  );
}

/** The earliest next slot among active schedules, or null: when the schedules' alarm should fire. */
export async function earliestNextRun(db: Db): Promise<number | null> {
  const row = await db.get<{ at: number | null }>(
    sql`SELECT min(next_run_at) AS at FROM schedules WHERE paused = 0 AND next_run_at < ${NEVER}`,
  );
  return row?.at ?? null;
}

/**
 * Records a firing and moves the schedule on — only if it still expects the slot it was read with
 * (compare and set on next_run_at), so two passes racing over one slot advance it once. Returns whether
 * this call advanced it.
 */
export async function advanceSchedule(
  db: Db,
  row: ScheduleRow,
  fired: {
    slot: number;
    taskId: string | null;
    outcome: "enqueued" | "skipped_overlap" | "skipped_missed" | "error";
    error: string | null;
  },
  nextRunAt: number,
  now: number,
): Promise<boolean> {
  const rows = await db.all(sql`UPDATE schedules SET next_run_at = ${nextRunAt}, last_slot_at = ${fired.slot},
      last_task_id = coalesce(${fired.taskId}, last_task_id), last_outcome = ${fired.outcome},
      last_error = ${fired.error}, updated_at = ${now}
    WHERE name = ${row.name} AND next_run_at = ${row.next_run_at} RETURNING name`);
  return rows.length > 0;
}
