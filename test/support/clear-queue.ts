import { expect } from "vitest";
import type { FencedItem } from "../../src/engine/ack";
import type { TaskStore } from "../../src/engine/store";

/**
 * Ends every task of `queue` on `store` and deletes them, so that a later sweep of the same database (a
 * cron tick further on in the file's clock range) finds nothing of it: no due task to wake, no lapsed lease
 * to reap, nothing to prune. For a test that runs one scenario many times, each at a later time (the
 * interrupt-at-every-D1-call loops, test/support/failing-d1.ts): without it the k-th run's ticks also sweep
 * the k-1 scenarios before it, so a run's D1 calls (the points tried) change from one run to the next and
 * its time grows with k. Processing tasks end by completing their `leases` (a cancel would only be
 * requested); pending and waiting ones are cancelled.
 *
 * @example
 * await clearQueue(d1TaskStore(db()), s.queue, s.now, [{ id: s.live.id, leaseToken: s.live.leaseToken! }]);
 */
export async function clearQueue(store: TaskStore, queue: string, now: number, leases: FencedItem[] = []) {
  if (leases.length > 0) await store.completeTasks(leases, now);
  const { cancel_requested } = await store.cancelQueueTasks(queue, {}, now);
  expect(cancel_requested, `a processing task of ${queue} was not given to clearQueue`).toBe(0);
  await store.purgeTasks(queue, { before: now + 1 });
  expect(await store.countQueueTasksHeld(queue)).toBe(0);
}
