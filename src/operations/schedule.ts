import { enqueuedChange } from "../effects/changes";
import type { ScheduleRow } from "../schedules/schedule-store";
import { pauseSchedule, putSchedule, triggerSchedule, type ScheduleRequest } from "../schedules/schedule-service";
import { homeShard } from "../shards/shard-set";
import { shardedTaskStore } from "../shards/task-store";
import type { OperationContext } from "./context";

/**
 * Fires a schedule once now, outside its cron (its slot id dedupes a repeat within the same second);
 * reported as an enqueue is: the partition that got the task is woken, its `enqueued` event published.
 *
 * @example
 * const { id, deduplicated, queue } = await triggerScheduleNow(op, "nightly-report");
 */
export async function triggerScheduleNow(op: OperationContext, name: string) {
  const { enqueued, ...fired } = await triggerSchedule(homeShard(op.env).db, name, op.now, shardedTaskStore(op.env));
  op.effects.after(enqueuedChange(fired.queue, enqueued));
  return fired;
}

/**
 * Creates or replaces a schedule; an active one arms the Scheduler for its first slot before this
 * returns (awaited: once the PUT answers, the alarm is set).
 *
 * @example
 * const row = await saveSchedule(op, "nightly", { queue: "reports", cron: "0 3 * * *" });
 */
export async function saveSchedule(op: OperationContext, name: string, request: ScheduleRequest): Promise<ScheduleRow> {
  const row = await putSchedule(homeShard(op.env).db, name, request, op.now);
  if (row.paused === 0) await op.effects.follow({ kind: "schedule-set", nextRunAt: row.next_run_at });
  return row;
}

/**
 * Pauses a schedule (no slot fires until it resumes), or resumes it from its next slot after now,
 * arming the Scheduler for it.
 *
 * @example
 * await setSchedulePaused(op, "nightly", false);
 */
export async function setSchedulePaused(op: OperationContext, name: string, paused: boolean): Promise<ScheduleRow> {
  const row = await pauseSchedule(homeShard(op.env).db, name, paused, op.now);
  if (!paused) await op.effects.follow({ kind: "schedule-set", nextRunAt: row.next_run_at });
  return row;
}
