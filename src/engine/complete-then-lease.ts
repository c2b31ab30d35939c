import type { CompleteItem } from "./complete";
import type { LeaseRequest } from "./lease";
import type { TaskStore } from "./store";

/**
 * `completeThenLease` as the two calls it stands for, one after the other (src/engine/store-writes.ts): the
 * row store's and the pack store's, and the served store's wherever it cannot send both in one batch.
 *
 * @example
 * const { outcomes, leased } = await completeThenLeaseInTurn(store, items, request, Date.now());
 */
export async function completeThenLeaseInTurn(
  store: Pick<TaskStore, "completeTasks" | "leaseAnswers">,
  items: CompleteItem[],
  request: LeaseRequest,
  now: number,
) {
  const outcomes = await store.completeTasks(items, now, { queue: request.queue });
  return { outcomes, leased: await store.leaseAnswers(request, now) };
}
