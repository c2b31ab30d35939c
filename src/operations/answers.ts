import type { AckOutcome } from "../engine/ack";
import type { NewTask } from "../engine/enqueue";
import { toIso } from "../engine/time";
import type { TaskRow } from "../db/schema";
import type { AckBody, ExtendBody, LeaseBody, NewTaskSchema } from "../contracts/api";
import type { ExtendItem } from "../engine/extend";
import type { AckBatch } from "./ack";
import type { LeaseAsk } from "./lease";
import type { z } from "zod";

/**
 * The API's answers built from what operations return, and the API's task turned into the engine's: one
 * place for every entry point that speaks the API's shapes (the HTTP routes, the Workers RPC binding), so
 * the two cannot answer differently.
 */

/**
 * An API task as the engine enqueues it, `delay_s` / `run_at` resolved against `now`.
 *
 * @example
 * newTaskOf({ payload: { n: 1 }, delay_s: 5 }, Date.now());
 */
export function newTaskOf(task: z.infer<typeof NewTaskSchema>, now: number): NewTask {
  return {
    id: task.id,
    type: task.type,
    payload: task.payload,
    priority: task.priority,
    runAt:
      task.run_at !== undefined
        ? Date.parse(task.run_at)
        : task.delay_s !== undefined
          ? now + Math.round(task.delay_s * 1000)
          : now,
    maxAttempts: task.max_attempts,
    dedupeKey: task.dedupe_key,
    group: task.group,
    then: task.then,
  };
}

/**
 * The answer to one holder write on one task (complete, fail, release): the outcome, or its error thrown
 * for the caller's error model.
 *
 * @example
 * return c.json(singleAckAnswer(await ackTask(op, "complete", item)), 200);
 */
/** A lease body as the API takes it (HTTP, RPC), as the lease operation takes it. No visibility timeout given:
 * null, and the lease statement reads the queue's (no extra D1 query). */
export function leaseAskOf(body: z.infer<typeof LeaseBody>): LeaseAsk {
  return {
    max: body.max,
    visibilityTimeoutS: body.visibility_timeout_s ?? null,
    holder: body.holder ?? null,
    waitMs: Math.round(body.wait_s * 1000),
    waiterId: body.waiter_id,
  };
}

/** A batch ack body as the API takes it (HTTP, RPC), as `ackTasks` takes it. */
export function ackBatchOf(body: z.infer<typeof AckBody>): AckBatch {
  return {
    complete: body.complete.map((i) => ({ id: i.id, leaseToken: i.lease_token, result: i.result })),
    fail: body.fail.map((i) => ({
      id: i.id,
      leaseToken: i.lease_token,
      message: i.error,
      retryable: i.retryable,
      retryAfterS: i.retry_after_s,
    })),
    release: body.release.map((i) => ({ id: i.id, leaseToken: i.lease_token })),
  };
}

/** An extend body as the API takes it (HTTP, RPC), as `extendTaskLeases` takes it. No length named: each
 * lease's own, as it was leased (read in the extend statement). */
export function extendItemsOf(body: z.infer<typeof ExtendBody>): ExtendItem[] {
  return body.leases.map((l) => ({
    id: l.id,
    leaseToken: l.lease_token,
    visibilityTimeoutS: l.visibility_timeout_s ?? body.visibility_timeout_s,
  }));
}

export function singleAckAnswer(outcome: AckOutcome) {
  if (!outcome.ok) throw outcome.error;
  return {
    id: outcome.id,
    state: outcome.state,
    run_at: outcome.state === "pending" ? toIso(outcome.run_at) : null,
    children: outcome.children.map((child) => child.id),
    repeated: outcome.repeated,
  };
}

/** A batch ack's per-item results: each succeeds or fails on its own. */
export function ackResults(outcomes: AckOutcome[]) {
  return outcomes.map((o) =>
    o.ok
      ? {
          id: o.id,
          ok: true as const,
          state: o.state,
          children: o.children.map((child) => child.id),
          repeated: o.repeated,
        }
      : { id: o.id, ok: false as const, error: { code: o.error.code, message: o.error.message } },
  );
}

/** An extend's per-item results: the new expiry, or the item's error. */
export function extendResults(outcomes: AckOutcome[], now: number) {
  return outcomes.map((o) =>
    o.ok
      ? { id: o.id, ok: true as const, lease_expires_at: toIso(o.lease_expires_at ?? now) }
      : { id: o.id, ok: false as const, error: { code: o.error.code, message: o.error.message } },
  );
}

/** A heartbeat's answer: the lease's new expiry and the progress recorded. */
export function heartbeatAnswer(row: TaskRow, now: number) {
  return {
    id: row.id,
    lease_expires_at: toIso(row.leaseExpiresAt ?? now),
    progress: row.progress,
    progress_message: row.progressMessage,
  };
}
