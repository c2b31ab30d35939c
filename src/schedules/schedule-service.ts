import { sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { dbTaskStore, type EnqueuedTasks, type TaskStore } from "../shards/task-store";
import { toIso } from "../contracts/time";
import { storedJsonError } from "../contracts/json-value";
import { firstSlot, nextSlots, parseCronSpec } from "./cron-spec";
import {
  NEVER,
  getSchedule,
  scheduledTaskInput,
  setPaused,
  upsertSchedule,
  type ScheduledTask,
  type ScheduleRow,
} from "./schedule-store";
import { slotTaskId } from "./slot-id";

export interface ScheduleRequest {
  queue: string;
  cron: string;
  timezone?: string;
  task?: ScheduledTask;
  overlap?: "allow" | "skip";
  catch_up?: "none" | "last" | "all";
  paused?: boolean;
}

/**
 * Creates or replaces a schedule. A bad expression or time zone is `invalid_request` naming `cron` or
 * `timezone`, as is an expression no date matches (it would never fire); a task payload its slots' enqueue
 * would refuse is enqueue's own `payload_too_large` naming `task.payload`. Refused, nothing is stored. The
 * first slot is the first after `now`: a new or changed schedule does not fire for the past.
 *
 * @example
 * await putSchedule(db, "notes-pass", { queue: "notes", cron: "@every 30s" }, Date.now());
 */
export async function putSchedule(db: Db, name: string, request: ScheduleRequest, now: number): Promise<ScheduleRow> {
  const timezone = request.timezone ?? "UTC";
  const next = firstSlot(parseCronSpec(request.cron, timezone), request.cron, now);
  // Checked here, not only at each slot's enqueue: accepted, every slot would record a 413 instead.
  const payloadError = storedJsonError(request.task?.payload, "task.payload");
  if (payloadError) throw payloadError;
  return upsertSchedule(
    db,
    name,
    {
      queue: request.queue,
      cron: request.cron.trim(),
      timezone,
      task: request.task ?? {},
      overlap: request.overlap ?? "skip",
      catch_up: request.catch_up ?? "none",
      paused: request.paused ?? false,
    },
    next,
    now,
  );
}

/** Pauses a schedule (no slot fires) or resumes it from the first slot after `now`. */
export async function pauseSchedule(db: Db, name: string, paused: boolean, now: number): Promise<ScheduleRow> {
  if (paused) return setPaused(db, name, true, null, now);
  const row = await getSchedule(db, name);
  const next = parseCronSpec(row.cron, row.timezone).next(now) ?? NEVER;
  return setPaused(db, name, false, next, now);
}

/**
 * Runs a schedule now, outside its slots: enqueues its task with the id derived from (schedule, now) — a
 * repeated trigger in the same millisecond is one task. Overlap does not apply: a trigger is asked for.
 * `enqueued` is what the store answered, for the caller to report (src/operations/schedule.ts).
 *
 * @example
 * const { id } = await triggerSchedule(db, "nightly-scan", Date.now());
 */
export async function triggerSchedule(
  db: Db,
  name: string,
  now: number,
  store: TaskStore = dbTaskStore(db),
): Promise<{ id: string; deduplicated: boolean; queue: string; enqueued: EnqueuedTasks }> {
  const row = await getSchedule(db, name);
  const task = JSON.parse(row.task) as ScheduledTask;
  const id = await slotTaskId(name, now);
  const enqueued = await store.enqueue(row.queue, [scheduledTaskInput(task, id, now)], now);
  const { tasks } = enqueued;
  await db.run(sql`UPDATE schedules SET last_slot_at = ${now}, last_task_id = ${tasks[0]!.id},
      last_outcome = 'enqueued', last_error = NULL, updated_at = ${now} WHERE name = ${name}`);
  return { id: tasks[0]!.id, deduplicated: tasks[0]!.deduplicated, queue: row.queue, enqueued };
}

/** The wire form of a schedule: its next 5 slots and its last run's task with that task's state now. */
export async function scheduleView(db: Db, row: ScheduleRow, now: number, store: TaskStore = dbTaskStore(db)) {
  const spec = parseCronSpec(row.cron, row.timezone);
  const lastState = row.last_task_id ? await store.taskState(row.last_task_id) : null;
  // Paused, or stored with no slot left (NEVER: an expression no date matches, stored before PUT refused
  // them): no next run to show.
  const idle = row.paused === 1 || row.next_run_at >= NEVER;
  return {
    name: row.name,
    queue: row.queue,
    cron: row.cron,
    timezone: row.timezone,
    task: JSON.parse(row.task) as Record<string, unknown>,
    overlap: row.overlap,
    catch_up: row.catch_up,
    paused: row.paused === 1,
    next_run_at: idle ? null : toIso(row.next_run_at),
    next_runs: idle ? [] : nextSlots(spec, Math.max(now, row.next_run_at - 1), 5).map((t) => toIso(t)),
    last_run:
      row.last_slot_at === null
        ? null
        : {
            slot: toIso(row.last_slot_at),
            outcome: row.last_outcome,
            task_id: row.last_task_id,
            task_state: lastState,
            error: row.last_error,
          },
    created_at: toIso(row.created_at),
    updated_at: toIso(row.updated_at),
  };
}
