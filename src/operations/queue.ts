import type { RedriveScope } from "../engine/redrive";
import { cancelQueueOf, redriveQueueOf } from "../shards/queue-ops";
import { putQueueConfigOf, type QueueSettings } from "../shards/queue-config-ops";
import { queueRoute } from "../shards/queue-route";
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
  const result = await cancelQueueOf(await queueRoute(op.env, queue, op.now), scope, op.now, ids);
  op.effects.after({ kind: "cancelled", queue, ids });
  return result;
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
