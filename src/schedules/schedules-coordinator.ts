import type { Env } from "../env";

/**
 * The name of the one Coordinator Durable Object that fires every schedule. `~` is not allowed in a
 * queue name (QUEUE_NAME_PATTERN), so it can never be a queue's coordinator.
 *
 * Why one object for all schedules rather than each target queue's coordinator: a schedule's alarm then
 * never mixes with a queue's own alarm (due tasks, long polls, push dispatch), one alarm at the earliest
 * slot of all schedules is all there is to keep, and the cron tick re-arms one object. Firing is one D1
 * read of the due schedules plus one enqueue per slot, so one object serves thousands of schedules.
 */
export const SCHEDULES_OBJECT = "~schedules";

/**
 * Makes sure the schedules' alarm fires by `at` (ms). Called after a schedule is created, changed or
 * resumed, and by the cron tick (which re-arms an alarm an eviction lost).
 *
 * @example
 * await armSchedules(env, row.next_run_at);
 */
export async function armSchedules(env: Env, at: number): Promise<void> {
  await env.COORDINATOR.get(env.COORDINATOR.idFromName(SCHEDULES_OBJECT)).armSchedules({ at });
}
