import type { Db } from "../db/client";
import { enqueuedChange } from "../effects/changes";
import { follow } from "../effects/follow";
import type { Env } from "../env";
import { homeShard } from "../shards/shard-set";
import { dbTaskStore, shardedTaskStore, type EnqueuedTasks, type TaskStore } from "../shards/task-store";
import { EdgeqError } from "../contracts/errors";
import {
  MAX_CATCH_UP_SLOTS,
  MAX_SCHEDULES_PER_FIRE,
  MAX_SLOT_WALK,
  SCHEDULE_MISFIRE_GRACE_S,
} from "../contracts/limits";
import { parseCronSpec, type CronSpec } from "./cron-spec";
import {
  NEVER,
  advanceSchedule,
  dueSchedules,
  earliestNextRun,
  scheduledTaskInput,
  type ScheduledTask,
  type ScheduleRow,
} from "./schedule-store";
import { slotTaskId } from "./slot-id";

/** What one pass did, per schedule: the slots it enqueued (task ids), skipped or failed. */
export interface FireReport {
  name: string;
  queue: string;
  enqueued: Array<{ slot: number; id: string }>;
  skipped: number[];
  error: string | null;
}

/**
 * The due slots of a schedule at `now` that its catch-up policy fires, oldest first. Slots at most
 * SCHEDULE_MISFIRE_GRACE_S late are on time (a late or lost-and-re-armed alarm) and always fire; older
 * ones were missed: `none` fires none of them, `last` the latest, `all` up to MAX_CATCH_UP_SLOTS latest.
 */
export function slotsToFire(row: Pick<ScheduleRow, "next_run_at" | "catch_up">, spec: CronSpec, now: number): number[] {
  const due: number[] = [];
  let slot: number | null = row.next_run_at;
  const graceStart = now - SCHEDULE_MISFIRE_GRACE_S * 1000;
  let steps = 0;
  while (slot !== null && slot <= now) {
    due.push(slot);
    // Bounded memory: only the latest slots can fire.
    if (due.length > MAX_CATCH_UP_SLOTS * 2) due.splice(0, due.length - MAX_CATCH_UP_SLOTS);
    // Bounded time: after a long downtime (an @every 1s schedule down for a month), jump to the recent past
    // — far enough back for MAX_CATCH_UP_SLOTS slots at the interval seen so far — instead of walking it all.
    if (++steps === MAX_SLOT_WALK && slot < graceStart) {
      const interval = Math.max(1, (slot - row.next_run_at) / steps);
      const restart = Math.max(slot, now - SCHEDULE_MISFIRE_GRACE_S * 1000 - (MAX_CATCH_UP_SLOTS + 1) * interval);
      due.length = 0;
      slot = spec.next(restart - 1);
      continue;
    }
    slot = spec.next(slot);
  }
  const onTime = due.filter((s) => s >= graceStart);
  const missed = due.filter((s) => s < graceStart);
  const caughtUp =
    row.catch_up === "all" ? missed.slice(-MAX_CATCH_UP_SLOTS) : row.catch_up === "last" ? missed.slice(-1) : [];
  return [...caughtUp, ...onTime];
}

/** Whether the schedule's last task is still pending or processing (overlap: skip). */
async function lastStillLive(store: TaskStore, row: ScheduleRow): Promise<boolean> {
  if (!row.last_task_id) return false;
  const state = await store.taskState(row.last_task_id);
  return state === "pending" || state === "processing";
}

/**
 * Fires every schedule due at `now` (at most MAX_SCHEDULES_PER_FIRE per call): enqueues one task per slot
 * its catch-up policy fires, with the id derived from (schedule, slot) — so a pass that is repeated, raced
 * by the cron tick or replayed after an eviction enqueues each slot once. With `overlap: "skip"` a slot is
 * skipped while the previous slot's task is still pending or processing. A task that cannot be enqueued
 * (its queue's rules refuse it) records the error on the schedule and the schedule moves on; it never
 * retries in a loop. Then each schedule advances to its first slot after `now`.
 *
 * `onEnqueued` is told the queue and what the store enqueued (the caller reports it to the effects owner,
 * which wakes the partitions written and publishes the tasks' `enqueued` events, as for any enqueue).
 * Returns what was done and when the next slot of any schedule is due.
 *
 * @example
 * const { nextAt } = await fireDueSchedules(db, Date.now());
 */
export async function fireDueSchedules(
  db: Db,
  now: number,
  onEnqueued: (queue: string, enqueued: EnqueuedTasks) => Promise<void> = async () => {},
  store: TaskStore = dbTaskStore(db),
): Promise<{ reports: FireReport[]; nextAt: number | null }> {
  const rows = await dueSchedules(db, now, MAX_SCHEDULES_PER_FIRE);
  const reports: FireReport[] = [];
  for (const row of rows) reports.push(await fireOne(db, row, now, onEnqueued, store));
  const nextAt = rows.length === MAX_SCHEDULES_PER_FIRE ? now : await earliestNextRun(db);
  return { reports, nextAt };
}

/**
 * Fires every schedule due at `now` on this deployment (schedules live on the home database; their tasks
 * go to their queues' shards) and reports each enqueue to the effects owner, as any enqueue is: the
 * Scheduler's alarm and the cron tick both fire through this.
 *
 * @example
 * const { nextAt } = await fireSchedules(env, Date.now());
 */
export function fireSchedules(env: Env, now: number) {
  return fireDueSchedules(
    homeShard(env).db,
    now,
    (queue, enqueued) => follow(env, enqueuedChange(queue, enqueued)),
    shardedTaskStore(env),
  );
}

async function fireOne(
  db: Db,
  row: ScheduleRow,
  now: number,
  onEnqueued: (queue: string, enqueued: EnqueuedTasks) => Promise<void>,
  store: TaskStore,
): Promise<FireReport> {
  const report: FireReport = { name: row.name, queue: row.queue, enqueued: [], skipped: [], error: null };
  let spec: CronSpec;
  try {
    spec = parseCronSpec(row.cron, row.timezone);
  } catch (error) {
    // Stored specs were validated; a runtime that lost a time zone must not make the schedule spin.
    report.error = (error as Error).message;
    await advanceSchedule(
      db,
      row,
      { slot: row.next_run_at, taskId: null, outcome: "error", error: report.error },
      now + 3_600_000,
      now,
    );
    return report;
  }
  const slots = slotsToFire(row, spec, now);
  const task = JSON.parse(row.task) as ScheduledTask;
  let lastTaskId: string | null = null;
  let outcome: "enqueued" | "skipped_overlap" | "skipped_missed" | "error" =
    slots.length > 0 ? "enqueued" : "skipped_missed";
  const live = row.overlap === "skip" && (await lastStillLive(store, row));
  if (live) {
    report.skipped = slots;
    outcome = "skipped_overlap";
  } else if (slots.length > 0) {
    // With overlap: skip, a catch-up enqueues only its latest slot: the earlier ones would overlap it.
    const firing = row.overlap === "skip" ? slots.slice(-1) : slots;
    report.skipped = slots.slice(0, slots.length - firing.length);
    try {
      const ids = await Promise.all(firing.map((slot) => slotTaskId(row.name, slot)));
      const enqueued = await store.enqueue(
        row.queue,
        ids.map((id) => scheduledTaskInput(task, id, now)),
        now,
      );
      report.enqueued = firing.map((slot, i) => ({ slot, id: enqueued.tasks[i]!.id }));
      lastTaskId = ids.at(-1) ?? null;
      if (enqueued.earliestRunAt !== null) await onEnqueued(row.queue, enqueued);
    } catch (error) {
      if (!(error instanceof EdgeqError)) throw error;
      report.error = error.message;
      outcome = "error";
    }
  }
  const next = spec.next(now);
  await advanceSchedule(
    db,
    row,
    { slot: slots.at(-1) ?? row.next_run_at, taskId: lastTaskId, outcome, error: report.error },
    // An expression with no slot left parks the schedule far ahead rather than firing again.
    next ?? NEVER,
    now,
  );
  return report;
}
