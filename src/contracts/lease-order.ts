import type { StoredTask } from "./stored-task";

/** What a leased task is ordered by. */
export type LeaseOrdered = Pick<StoredTask, "id" | "priority" | "runAt">;

/**
 * Priority descending, then run_at, then id — the order every task store leases in (src/engine/store.ts),
 * and the order a lease over several stores sorts its batch by (src/shards/partitioned-lease.ts).
 *
 * @example
 * leased.sort(leaseOrder);
 */
export function leaseOrder(a: LeaseOrdered, b: LeaseOrdered): number {
  return b.priority - a.priority || a.runAt - b.runAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}
