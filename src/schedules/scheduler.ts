import { DurableObject } from "cloudflare:workers";
import { schedulerArmSchema, type SchedulerArm, type SchedulerRpc } from "../protocols/durable-objects";
import type { Env } from "../env";
import { LATEST_ALARM_AT } from "../contracts/limits";
import { fireSchedules } from "./fire-schedules";

/**
 * SCHEDULER: the one Durable Object (named SCHEDULER_OBJECT) that fires every schedule. Its alarm is set
 * at the earliest next slot of all schedules; firing is one D1 read of the due schedules plus one enqueue
 * per slot, each reported to the effects owner as any enqueue is (the partitions that got tasks woken, their
 * `enqueued` events published).
 *
 * Why one object for all schedules rather than each target queue's coordinator: a schedule's alarm then
 * never mixes with a queue's own alarm (due tasks, long polls, push dispatch), one alarm at the earliest
 * slot of all schedules is all there is to keep, and the cron tick re-arms one object (an eviction may
 * lose an alarm). One object serves thousands of schedules.
 *
 * @example
 * await op.effects.follow({ kind: "schedule-set", nextRunAt: row.next_run_at }); // arms it (src/effects/)
 */
export class Scheduler extends DurableObject<Env> implements SchedulerRpc {
  /** The time every decision here is made at; tests replace it (fake timers reach no alarm). */
  now: () => number = () => Date.now();

  /** Makes sure the alarm fires by `at` (ms). */
  async arm(input: SchedulerArm): Promise<void> {
    const { at } = schedulerArmSchema.parse(input);
    await this.alarmNoLaterThan(at);
  }

  /** Fires every due slot, wakes the queues that got tasks, re-arms at the next slot. */
  override async alarm(): Promise<void> {
    const { nextAt } = await fireSchedules(this.env, this.now());
    if (nextAt !== null) await this.alarmNoLaterThan(nextAt);
  }

  /**
   * Never postpones an earlier alarm (inside a running alarm `getAlarm()` is null unless one was set since).
   * A time past LATEST_ALARM_AT (a schedule's NEVER) arms nothing: setAlarm would throw, failing the caller
   * — a PUT, a resume, the cron tick — and every other schedule's arming with it.
   */
  private async alarmNoLaterThan(at: number): Promise<void> {
    if (at > LATEST_ALARM_AT) return;
    const current = await this.ctx.storage.getAlarm();
    if (current == null || at < current) await this.ctx.storage.setAlarm(at);
  }
}
