/** The `key` label of the sum of a queue's keys past its top ones. A task key may itself be "_other": its
 * series then adds up with the rest's (stated in docs/flow-control.md; renaming a key is the fix). */
export const OTHER_KEYS = "_other";

/** A key's live figures for /metrics: due (pending, run time passed) and running (processing) tasks. */
export interface KeyFigures {
  queue: string;
  key: string;
  due: number;
  running: number;
}

/** A database's keyed figures: each queue's top keys and the sum of the rest (`OTHER_KEYS`), and the queues
 * paused as a whole. */
export interface FlowFigures {
  keys: KeyFigures[];
  pausedQueues: string[];
}

/**
 * Merges databases' figures (a queue's partitions): a key's tasks are in one database, so the queue's keys
 * are ranked again over all, its top `top` kept and the rest summed into its `OTHER_KEYS` row with theirs.
 */
export function mergeFlowFigures(all: FlowFigures[], top: number): FlowFigures {
  const byQueue = new Map<string, KeyFigures[]>();
  for (const row of all.flatMap((f) => f.keys)) byQueue.set(row.queue, [...(byQueue.get(row.queue) ?? []), row]);
  const keys: KeyFigures[] = [];
  for (const [queue, rows] of [...byQueue].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const named = rows
      .filter((r) => r.key !== OTHER_KEYS)
      .sort((a, b) => b.due - a.due || b.running - a.running || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    const rest = [...named.slice(top), ...rows.filter((r) => r.key === OTHER_KEYS)];
    keys.push(...named.slice(0, top));
    if (rest.length > 0) {
      keys.push({
        queue,
        key: OTHER_KEYS,
        due: rest.reduce((n, r) => n + r.due, 0),
        running: rest.reduce((n, r) => n + r.running, 0),
      });
    }
  }
  return { keys, pausedQueues: [...new Set(all.flatMap((f) => f.pausedQueues))].sort() };
}
