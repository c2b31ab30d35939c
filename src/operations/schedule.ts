import { triggerSchedule } from "../schedules/schedule-service";
import { homeShard } from "../shards/shard-set";
import { shardedTaskStore } from "../shards/task-store";
import type { OperationContext } from "./context";

/**
 * Fires a schedule once now, outside its cron (its slot id dedupes a repeat within the same second);
 * the target queue is woken.
 *
 * @example
 * const { id, deduplicated, queue } = await triggerScheduleNow(op, "nightly-report");
 */
export async function triggerScheduleNow(op: OperationContext, name: string) {
  const fired = await triggerSchedule(homeShard(op.env).db, name, op.now, shardedTaskStore(op.env));
  op.effects.after({ kind: "due", queue: fired.queue, runAt: op.now });
  return fired;
}
