import { leaseOrder, type LeaseOrdered } from "../contracts/lease-order";
import type { LeaseRequest, StoredTask, TaskStore } from "../engine/store";

/** One store's lease: its `leaseTasks` (tasks) or `leaseAnswers` (rendered views), src/engine/store-writes.ts. */
export type LeaseOn<T> = (store: TaskStore, request: LeaseRequest, now: number) => Promise<T[]>;

/** The default lease: the store's tasks as stored. */
export const leaseStoredTasks: LeaseOn<StoredTask> = (store, request, now) => store.leaseTasks(request, now);

/**
 * Leases up to `request.max` tasks of a queue spread over several stores (its partitions' databases, or the
 * two shards of a queue being moved): from `stores[start]` first, then the next ones in turn until the batch
 * is full. Each store's lease is atomic and never hands a task out twice (TaskWrites.leaseTasks), so no task
 * can be leased twice here either; what is lost is a global order: priority and run_at order hold within
 * each store, and a batch is sorted by them only among the tasks it got.
 *
 * @example
 * const leased = await leaseFromPartitions([store0, store1], "emails", { max: 100, ... }, 1, now, leaseStoredTasks);
 */
export async function leaseFromPartitions<T extends LeaseOrdered>(
  stores: TaskStore[],
  queue: string,
  request: Omit<LeaseRequest, "queue">,
  start: number,
  now: number,
  lease: LeaseOn<T>,
): Promise<T[]> {
  const leased: T[] = [];
  for (let i = 0; i < stores.length && leased.length < request.max; i++) {
    const store = stores[(start + i) % stores.length]!;
    leased.push(...(await lease(store, { ...request, queue, max: request.max - leased.length }, now)));
  }
  return stores.length > 1 ? leased.sort(leaseOrder) : leased;
}
