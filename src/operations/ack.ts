import type { AckKind, AckOutcome, CompleteItem, ExtendItem, FailItem, FencedItem } from "../engine/store";
import { ackOnRoute } from "../shards/ack-routing";
import { queueRoute, routeShards } from "../shards/queue-route";
import { onTaskShard } from "../shards/task-locator";
import type { OperationContext } from "./context";
import type { LeaseAsk } from "./lease";

/** A batch of holder writes on one queue: each item fenced by its lease token. */
export interface AckBatch {
  complete?: CompleteItem[];
  fail?: FailItem[];
  release?: FencedItem[];
}

/**
 * Applies a batch of acks on one queue (a task of another queue is `not_found`): completions, failures
 * and releases, each kind one fenced statement per shard, the kinds in parallel. Outcomes come back in
 * the order complete, fail, release, each in input order.
 *
 * @example
 * const outcomes = await ackTasks(op, "emails", { complete: [{ id, leaseToken, result: { sent: true } }] });
 */
export async function ackTasks(op: OperationContext, queue: string, batch: AckBatch): Promise<AckOutcome[]> {
  const scope = { queue };
  const route = await queueRoute(op.env, queue, op.now);
  const [completed, failed, released] = await Promise.all([
    ackOnRoute(route, batch.complete ?? [], (store, items) => store.completeTasks(items, op.now, scope)),
    ackOnRoute(route, batch.fail ?? [], (store, items) => store.failTasks(items, op.now, scope)),
    ackOnRoute(route, batch.release ?? [], (store, items) => store.releaseTasks(items, op.now, scope)),
  ]);
  const outcomes = [...completed, ...failed, ...released];
  op.effects.after({ kind: "acked", outcomes, kinds: ackKinds(batch) });
  return outcomes;
}

/** Each item's kind, in the order a batch's outcomes come: complete, fail, release. */
function ackKinds(batch: AckBatch): AckKind[] {
  return [
    ...(batch.complete ?? []).map(() => "complete" as const),
    ...(batch.fail ?? []).map(() => "fail" as const),
    ...(batch.release ?? []).map(() => "release" as const),
  ];
}

/**
 * Applies a batch of acks on one queue, then leases as `leaseTexts` does — `ackTasks` then `leaseTexts` in one
 * store call (TaskWrites.ackThenLease: the served store sends them in one D1 batch where it can). Only where that
 * is the same thing: the queue on one database (not partitioned over several, not moving: the ack's route and
 * the lease's are then that database alone) and a lease that does not wait. Null elsewhere: the caller makes
 * the calls. The effects are the calls' own, in their order.
 *
 * @example
 * const carried = await ackThenLeaseTexts(op, "emails", { complete: [{ id, leaseToken }] }, { max: 10, visibilityTimeoutS: null, holder: null, waitMs: 0 });
 */
export async function ackThenLeaseTexts(
  op: OperationContext,
  queue: string,
  batch: AckBatch,
  ask: LeaseAsk,
): Promise<{ outcomes: AckOutcome[]; texts: string[] } | null> {
  const kinds = ackKinds(batch);
  if (ask.waitMs > 0 || kinds.length === 0) return null;
  const shards = routeShards(await queueRoute(op.env, queue, op.now));
  if (shards.length !== 1) return null;
  const request = { queue, max: ask.max, visibilityTimeoutS: ask.visibilityTimeoutS, holder: ask.holder };
  const { outcomes, leased } = await shards[0]!.store.ackThenLease(batch, request, op.now);
  op.effects.after({ kind: "acked", outcomes, kinds });
  op.effects.after({ kind: "leased", queue, ids: leased.map((t) => t.id) });
  return { outcomes, texts: leased.map((t) => t.view) };
}

/**
 * One holder write on one task, found by its id wherever it lives: complete, fail or release.
 *
 * @example
 * const outcome = await ackTask(op, "complete", { id, leaseToken, result: null });
 */
export async function ackTask(op: OperationContext, kind: "complete", item: CompleteItem): Promise<AckOutcome>;
export async function ackTask(op: OperationContext, kind: "fail", item: FailItem): Promise<AckOutcome>;
export async function ackTask(op: OperationContext, kind: "release", item: FencedItem): Promise<AckOutcome>;
export async function ackTask(
  op: OperationContext,
  kind: AckKind,
  item: CompleteItem | FailItem | FencedItem,
): Promise<AckOutcome> {
  const outcome = await onTaskShard(op.env, item.id, async (shard) => {
    const [one] =
      kind === "complete"
        ? await shard.store.completeTasks([item as CompleteItem], op.now)
        : kind === "fail"
          ? await shard.store.failTasks([item as FailItem], op.now)
          : await shard.store.releaseTasks([item], op.now);
    return one!;
  });
  op.effects.after({ kind: "acked", outcomes: [outcome], kinds: [kind] });
  return outcome;
}

/**
 * Extends (and claims) leases on one queue; nothing follows an extension (no event: a lease that goes
 * on is not news), except for a task it found with a cancel request: that one ends cancelled, reported so.
 *
 * @example
 * const outcomes = await extendTaskLeases(op, "emails", [{ id, leaseToken, visibilityTimeoutS: 60 }]);
 */
export async function extendTaskLeases(
  op: OperationContext,
  queue: string,
  items: ExtendItem[],
): Promise<AckOutcome[]> {
  const route = await queueRoute(op.env, queue, op.now);
  const outcomes = await ackOnRoute(route, items, (store, group) => store.extendLeases(group, op.now, { queue }));
  // `task_cancelled`: this extension found the cancel request and ended the task cancelled — a change.
  const cancelled = outcomes.filter((o) => !o.ok && o.error.code === "task_cancelled").map((o) => o.id);
  // Each was running: a keyed one held its key's slot (the outcome does not say whether it was keyed; a wake-up
  // too many costs a coordinator call, one too few leaves a poll waiting for its timeout).
  if (cancelled.length > 0) op.effects.after({ kind: "cancelled", queue, ids: cancelled, freesFlowKey: true });
  return outcomes;
}

/**
 * Ends attempts early and makes the tasks due again at once (SQS's ChangeMessageVisibility to 0): a
 * failure with retry_after 0, so the receive still counts, as in SQS — and is published as one.
 *
 * @example
 * await failForRedelivery(op, "emails", [{ id, leaseToken, message: "visible again", retryAfterS: 0 }]);
 */
export async function failForRedelivery(op: OperationContext, queue: string, items: FailItem[]): Promise<AckOutcome[]> {
  const route = await queueRoute(op.env, queue, op.now);
  const outcomes = await ackOnRoute(route, items, (store, group) => store.failTasks(group, op.now, { queue }));
  op.effects.after({ kind: "acked", outcomes, kinds: outcomes.map(() => "fail" as const) });
  return outcomes;
}
