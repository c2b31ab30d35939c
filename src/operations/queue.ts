import type { RedriveScope, SettledDependent } from "../engine/store";
import { cancelQueueOf, redriveQueueOf } from "../shards/queue-ops";
import { putQueueConfigOf, type QueueSettings } from "../shards/queue-config-ops";
import { queueRoute, routeShards } from "../shards/queue-route";
import type { OperationContext } from "./context";

/**
 * Cancels a queue's live tasks (of one group, when given): pending ones at once, running ones when their
 * holders next write. Returns the counts.
 *
 * @example
 * const { cancelled, cancel_requested } = await cancelQueue(op, "emails", { group: "user-7" });
 */
export async function cancelQueue(op: OperationContext, queue: string, scope: { group?: string }) {
  const ids: string[] = [];
  const dependents: SettledDependent[] = [];
  const { freesFlowKey, ...result } = await cancelQueueOf(
    await queueRoute(op.env, queue, op.now),
    scope,
    op.now,
    ids,
    dependents,
  );
  // A keyed task it cancelled may have held its key's slot: the queue's waiting polls and push dispatch go on.
  op.effects.after({ kind: "cancelled", queue, ids, freesFlowKey });
  // Running tasks asked to stop: those under worker sessions hear it when their sessions are told.
  if (result.cancel_requested > 0) op.effects.after({ kind: "cancel-requested", queue });
  if (dependents.length > 0) op.effects.after({ kind: "dependents-settled", dependents });
  return result;
}

/**
 * Pauses or resumes a whole queue (`key` omitted) or one key of it, on every database holding a partition
 * of the queue: nothing of it is handed out while paused; enqueues are accepted, running tasks finish.
 * Reported as a config change that wakes the queue's coordinators (a resumed queue's long polls and push
 * dispatch get its backlog now).
 *
 * @example
 * await pauseFlow(op, "emails", { key: "acme", paused: true });
 */
export async function pauseFlow(op: OperationContext, queue: string, request: { key?: string; paused: boolean }) {
  const route = await queueRoute(op.env, queue, op.now);
  await Promise.all(
    routeShards(route).map((s) => s.store.setFlowPaused(queue, request.key ?? null, request.paused, op.now)),
  );
  op.effects.after({ kind: "configured", queue, mode: "pull", wake: true });
  return { queue, key: request.key ?? null, paused: request.paused };
}

/**
 * Puts a queue's dead (and, if asked, cancelled) tasks back to pending now.
 *
 * @example
 * const { redriven, ids } = await redrive(op, "emails", { state: "dead" });
 */
export async function redrive(op: OperationContext, queue: string, scope: RedriveScope) {
  const result = await redriveQueueOf(await queueRoute(op.env, queue, op.now), scope, op.now);
  op.effects.after({ kind: "redriven", queue, ids: result.ids, runAt: op.now });
  return result;
}

/**
 * Sets some or all of a queue's config; a push processor must be one this Worker has and can run with its
 * bindings (as `GET /v1/processors` reports). Reported: a push queue's coordinators run its backlog now.
 *
 * @example
 * await configureQueue(op, "renders", { mode: "push", processor: "tts" });
 */
export async function configureQueue(op: OperationContext, queue: string, patch: Partial<QueueSettings>) {
  const config = await putQueueConfigOf(op.env, queue, patch, op.now, op.processors.types(), (processor) =>
    op.processors.whyUnavailable(processor, op.env),
  );
  op.effects.after({ kind: "configured", queue, mode: config.mode });
  return config;
}
