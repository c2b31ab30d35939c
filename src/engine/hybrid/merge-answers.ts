import type { StateCounts } from "../read";
import type { LiveFigures } from "../live-figures";
import type { QueueFront } from "../live-front";
import type { QueueStats, TaskPage } from "../read";

/** The answers of a queue-wide read asked of both layouts of one database, put together as one store's. */

const minOf = (a: number | null, b: number | null) => (a === null ? b : b === null ? a : Math.min(a, b));

export function sumCounts(a: StateCounts, b: StateCounts): StateCounts {
  const sum = { ...a };
  for (const state of Object.keys(b) as Array<keyof StateCounts>) sum[state] = (sum[state] ?? 0) + b[state];
  return sum;
}

export function mergeStats(a: QueueStats, b: QueueStats): QueueStats {
  return {
    queue: a.queue,
    counts: sumCounts(a.counts, b.counts),
    due: a.due + b.due,
    oldest_due_at: minOf(a.oldest_due_at, b.oldest_due_at),
  };
}

/** Two pages of one listing (the same filter and cursor) as one: the first `limit` by id, and a cursor when
 * either side had more or the two together passed the limit. */
export function mergePages(a: TaskPage, b: TaskPage, limit: number): TaskPage {
  const merged = [...a.tasks, ...b.tasks].sort((x, y) => (x.id < y.id ? -1 : x.id > y.id ? 1 : 0));
  const tasks = merged.slice(0, limit);
  const more = merged.length > limit || a.next_cursor !== null || b.next_cursor !== null;
  return { tasks, next_cursor: more && tasks.length > 0 ? tasks.at(-1)!.id : null };
}

/** Per-queue answers of both sides, joined by queue (in the order first seen). */
export function byQueue<T extends { queue: string }>(a: T[], b: T[], join: (x: T, y: T) => T): T[] {
  const out = new Map<string, T>();
  for (const item of [...a, ...b]) {
    const seen = out.get(item.queue);
    out.set(item.queue, seen ? join(seen, item) : item);
  }
  return [...out.values()];
}

export function joinFigures(x: LiveFigures, y: LiveFigures): LiveFigures {
  return {
    queue: x.queue,
    pending: x.pending + y.pending,
    processing: x.processing + y.processing,
    due: x.due + y.due,
    oldest_due_at: minOf(x.oldest_due_at, y.oldest_due_at),
    lease_expired: x.lease_expired + y.lease_expired,
    overrun: x.overrun + y.overrun,
  };
}

export function joinFronts(x: QueueFront, y: QueueFront): QueueFront {
  return {
    queue: x.queue,
    due: x.due + y.due,
    capped: x.capped || y.capped,
    oldest_due_at: minOf(x.oldest_due_at, y.oldest_due_at),
    lease_expired: x.lease_expired + y.lease_expired,
    overrun: x.overrun + y.overrun,
    leasable: x.leasable || y.leasable,
    lapsed: [...x.lapsed, ...y.lapsed],
  };
}

export { minOf };
