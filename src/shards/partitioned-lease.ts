import type { Db } from "../db/client";
import { leaseOrder, type LeaseOrdered, type LeaseRequest } from "../engine/lease";

/** One database's lease: `leaseTasks` (rows) or `leaseAnswers` (rendered views), src/engine/lease.ts. */
export type LeaseOn<T> = (db: Db, request: LeaseRequest, now: number) => Promise<T[]>;

/**
 * Leases up to `request.max` tasks of a queue spread over several databases (its partitions, or the two
 * shards of a queue being moved): from `dbs[start]` first, then the next ones in turn until the batch is
 * full. Each database's lease is the one fenced CTE (src/engine/lease.ts), so no task can be leased twice
 * here either; what is lost is a global order: priority and run_at order hold within each database, and
 * a batch is sorted by them only among the tasks it got.
 *
 * @example
 * const leased = await leaseFromPartitions([db0, db1], "emails", { queue: "emails", max: 100, ... }, 1, now, leaseTasks);
 */
export async function leaseFromPartitions<T extends LeaseOrdered>(
  dbs: Db[],
  queue: string,
  request: Omit<LeaseRequest, "queue">,
  start: number,
  now: number,
  lease: LeaseOn<T>,
): Promise<T[]> {
  const leased: T[] = [];
  for (let i = 0; i < dbs.length && leased.length < request.max; i++) {
    const db = dbs[(start + i) % dbs.length]!;
    leased.push(...(await lease(db, { ...request, queue, max: request.max - leased.length }, now)));
  }
  return dbs.length > 1 ? leased.sort(leaseOrder) : leased;
}
