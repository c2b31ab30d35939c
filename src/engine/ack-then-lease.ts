import type { LeaseRequest } from "./lease";
import type { HolderAcks, TaskStore } from "./store";

/**
 * `ackThenLease` as the calls it stands for (src/engine/store-writes.ts): each kind of ack (the kinds at once, as
 * the API's batch ack makes them), then the lease. The row store's and the pack store's, and the served store's
 * wherever it cannot send them in one batch.
 *
 * @example
 * const { outcomes, leased } = await ackThenLeaseInTurn(store, { complete: items }, request, Date.now());
 */
export async function ackThenLeaseInTurn(
  store: Pick<TaskStore, "completeTasks" | "failTasks" | "releaseTasks" | "leaseAnswers">,
  acks: HolderAcks,
  request: LeaseRequest,
  now: number,
) {
  const scope = { queue: request.queue };
  const [completed, failed, released] = await Promise.all([
    acks.complete?.length ? store.completeTasks(acks.complete, now, scope) : [],
    acks.fail?.length ? store.failTasks(acks.fail, now, scope) : [],
    acks.release?.length ? store.releaseTasks(acks.release, now, scope) : [],
  ]);
  return { outcomes: [...completed, ...failed, ...released], leased: await store.leaseAnswers(request, now) };
}
