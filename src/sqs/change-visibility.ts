import * as z from "zod";
import type { AckOutcome } from "../engine/store";
import { MAX_VISIBILITY_TIMEOUT_S } from "../contracts/limits";
import { extendTaskLeases, failForRedelivery } from "../operations/ack";
import type { SqsContext } from "./context";
import { SqsError } from "./errors";
import { batchFailure, checkBatchEntries, intIn, parseInput, type BatchFailure } from "./input";
import { decodeReceiptHandle } from "./receipt-handle";
import { requireQueue } from "./require-queue";

const VisibilityTimeout = intIn(0, MAX_VISIBILITY_TIMEOUT_S);
const ChangeInput = z.object({ QueueUrl: z.string(), ReceiptHandle: z.string(), VisibilityTimeout });
const ChangeBatchInput = z.object({
  QueueUrl: z.string(),
  Entries: z.array(z.object({ Id: z.string(), ReceiptHandle: z.string(), VisibilityTimeout })),
});

interface Change {
  id: string;
  leaseToken: string;
  visibilityTimeoutS: number;
}

/** What ChangeMessageVisibility records in the task's error history when it makes a message visible. */
export const VISIBLE_AGAIN_MESSAGE = "ChangeMessageVisibility to 0: visible again at once";

/**
 * Applies visibility changes, fenced by each handle's lease token:
 * - above 0 -> extendTaskLeases: the lease now ends that many seconds from now (as SQS, counted from the call);
 * - 0 -> the message is visible again at once, and — as in SQS — its receive still counts: this ends the
 *   attempt through failForRedelivery, a fail with retry_after 0 (the fail/reap policy: pending and due at
 *   once, or dead when it was the last of max_attempts = maxReceiveCount), not a release, which would
 *   refund it.
 * Returns each change's outcome in input order.
 */
async function applyChanges(ctx: SqsContext, queue: string, changes: Change[]): Promise<AckOutcome[]> {
  const extend = changes.filter((c) => c.visibilityTimeoutS > 0);
  const reset = changes.filter((c) => c.visibilityTimeoutS === 0);
  const [extended, failed] = await Promise.all([
    extendTaskLeases(ctx.op, queue, extend),
    failForRedelivery(
      ctx.op,
      queue,
      reset.map((c) => ({ id: c.id, leaseToken: c.leaseToken, message: VISIBLE_AGAIN_MESSAGE, retryAfterS: 0 })),
    ),
  ]);
  const byChange = new Map<Change, AckOutcome>();
  extend.forEach((c, i) => byChange.set(c, extended[i]!));
  reset.forEach((c, i) => byChange.set(c, failed[i]!));
  return changes.map((c) => byChange.get(c)!);
}

/** The SQS error for a change that did not apply: the message is not in flight under this handle. */
function notInFlight(outcome: AckOutcome, handle: string): SqsError | null {
  if (outcome.ok) return null;
  if (outcome.error.code === "not_found") {
    return new SqsError(
      "ReceiptHandleIsInvalid",
      `The input receipt handle "${handle.slice(0, 80)}" is not a valid receipt handle.`,
    );
  }
  return new SqsError(
    "MessageNotInflight",
    `Value ${handle.slice(0, 80)} for parameter ReceiptHandle is invalid. Reason: Message does not exist or is not available for visibility timeout change.`,
  );
}

/** ChangeMessageVisibility (see applyChanges). A stale handle is MessageNotInflight. */
export async function changeMessageVisibility(input: unknown, ctx: SqsContext) {
  const request = parseInput(ChangeInput, input);
  const queue = await requireQueue(ctx, request.QueueUrl);
  const change = { ...decodeReceiptHandle(request.ReceiptHandle), visibilityTimeoutS: request.VisibilityTimeout };
  const [outcome] = await applyChanges(ctx, queue.name, [change]);
  const error = notInFlight(outcome!, request.ReceiptHandle);
  if (error) throw error;
  return {};
}

/** ChangeMessageVisibilityBatch: one statement per kind of change; each entry succeeds or fails alone. */
export async function changeMessageVisibilityBatch(input: unknown, ctx: SqsContext) {
  const request = parseInput(ChangeBatchInput, input);
  checkBatchEntries(request.Entries);
  const queue = await requireQueue(ctx, request.QueueUrl);
  const failed: BatchFailure[] = [];
  const valid: Array<{ entryId: string; handle: string; change: Change }> = [];
  for (const entry of request.Entries) {
    try {
      const change = { ...decodeReceiptHandle(entry.ReceiptHandle), visibilityTimeoutS: entry.VisibilityTimeout };
      valid.push({ entryId: entry.Id, handle: entry.ReceiptHandle, change });
    } catch (error) {
      if (!(error instanceof SqsError)) throw error;
      failed.push(batchFailure(entry.Id, error));
    }
  }
  const outcomes = await applyChanges(
    ctx,
    queue.name,
    valid.map((v) => v.change),
  );
  const successful: Array<{ Id: string }> = [];
  valid.forEach((v, i) => {
    const error = notInFlight(outcomes[i]!, v.handle);
    if (error) failed.push(batchFailure(v.entryId, error));
    else successful.push({ Id: v.entryId });
  });
  return { Successful: successful, Failed: failed };
}
