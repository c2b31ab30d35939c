import type { QueueFront, ReapedTask } from "../engine/store";

/**
 * The fronts as they stand after the reaper handled some of their lapsed leases: a reaped task is no longer
 * in flight (out of `lease_expired` and `overrun`), and one back to pending and due counts as due. So health
 * judges what the tick left, without walking the front a second time.
 *
 * @example
 * const figures = frontsAfterReap(fronts, reaped, now);
 */
export function frontsAfterReap(fronts: QueueFront[], reaped: ReapedTask[], now: number): QueueFront[] {
  const byQueue = new Map(fronts.map((f) => [f.queue, { ...f }]));
  const lapsed = new Map(fronts.flatMap((f) => f.lapsed.map((t) => [t.id, t] as const)));
  for (const task of reaped) {
    const front = byQueue.get(task.queue);
    const seen = lapsed.get(task.id);
    if (!front || !seen) continue;
    if (seen.expired) front.lease_expired -= 1;
    if (seen.overrun) front.overrun -= 1;
    if (task.state === "pending" && task.run_at <= now) {
      front.due += 1;
      front.oldest_due_at = Math.min(front.oldest_due_at ?? Infinity, task.run_at);
    }
  }
  return [...byQueue.values()];
}
