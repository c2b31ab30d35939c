import type { BulkAction } from "../contracts/bulk";
import type { TaskFilter } from "../engine/store";
import { queueRoute, routeShards } from "../shards/queue-route";
import type { OperationContext } from "./context";

/** A bulk action as an operation takes it: the action, the filter, at most `limit` tasks per database. */
export interface BulkRequest {
  action: BulkAction;
  filter: TaskFilter;
  dryRun: boolean;
  limit: number;
}

/**
 * Cancels, retries or redrives the queue's tasks a filter matches, at most `limit` on each database holding
 * the queue (one statement each: src/engine/bulk.ts), or on a dry run counts them (one read each, counting
 * at most `limit + 1`). `more` says a caller should call again. Every task changed is reported to the effects
 * owner: cancelled ones publish `cancelled` (and answer the waits for them), revived ones wake the queue and
 * publish `redriven`; tasks only asked to stop are reported when their holder stops, as a single cancel's.
 *
 * @example
 * const { count, more } = await bulkAction(op, "emails", { action: "cancel", filter: { group: "u7" }, dryRun: false, limit: 1000 });
 */
export async function bulkAction(
  op: OperationContext,
  queue: string,
  request: BulkRequest,
): Promise<{ count: number; more: boolean }> {
  const shards = routeShards(await queueRoute(op.env, queue, op.now));
  const { action, filter, limit } = request;
  if (request.dryRun) {
    const counts = await Promise.all(shards.map((s) => s.store.countForBulk(queue, action, filter, limit)));
    return { count: counts.reduce((n, c) => n + Math.min(c, limit), 0), more: counts.some((c) => c > limit) };
  }
  const changed = await Promise.all(shards.map((s) => s.store.applyBulk(queue, action, filter, limit, op.now)));
  const ids = changed.flatMap((c) => c.ids);
  const freesFlowKey = changed.some((c) => c.freesFlowKey);
  const count = changed.reduce((n, c) => n + c.count, 0);
  if (action === "cancel") {
    op.effects.after({ kind: "cancelled", queue, ids, freesFlowKey });
    // More changed than ended: running tasks asked to stop, which worker sessions hear when told.
    if (count > ids.length) op.effects.after({ kind: "cancel-requested", queue });
  } else op.effects.after({ kind: "redriven", queue, ids, runAt: op.now });
  return { count, more: changed.some((c) => c.more) };
}
