import type { QueueFlowState } from "../engine/store";
import { routeShards, type QueueRoute } from "./queue-route";

/**
 * Keys a queue's stats show: the busiest by due, then running tasks. Why 20: stats are read every few seconds
 * by dashboards and by the /metrics scrape (one series per shown key and measure: its cardinality), and a
 * queue's trouble is in its busiest keys; a key past them is summed into metrics' `_other` and found by its
 * tasks' list. A table of 20 rows fits the dashboard's queue page without paging.
 */
export const STATS_TOP_KEYS = 20;

/**
 * A queue's flow state over its shards (docs/flow-control.md): paused when its pause is set (it is written to
 * every partition's database, so any one says), and its busiest `limit` keys — a key's tasks are on one
 * partition (its key chooses it), so the shards' lists are merged, not summed.
 *
 * @example
 * const { paused, keys } = await queueFlowOf(route, STATS_TOP_KEYS, Date.now());
 */
export async function queueFlowOf(route: QueueRoute, limit: number, now: number): Promise<QueueFlowState> {
  const all = await Promise.all(routeShards(route).map((s) => s.store.readQueueFlow(route.queue, limit, now)));
  const keys = all
    .flatMap((s) => s.keys)
    .sort((a, b) => b.due - a.due || b.running - a.running || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
    .slice(0, limit);
  return { paused: all.some((s) => s.paused), keys };
}
