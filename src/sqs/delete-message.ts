import * as z from "zod";
import { ackTasks } from "../operations/ack";
import type { SqsContext } from "./context";
import { SqsError } from "./errors";
import { batchFailure, checkBatchEntries, parseInput, type BatchFailure } from "./input";
import { decodeReceiptHandle } from "./receipt-handle";
import { requireQueue } from "./require-queue";

const DeleteMessageInput = z.object({ QueueUrl: z.string(), ReceiptHandle: z.string() });
const DeleteMessageBatchInput = z.object({
  QueueUrl: z.string(),
  Entries: z.array(z.object({ Id: z.string(), ReceiptHandle: z.string() })),
});

/**
 * Deletes by completing: the same completion as the HTTP ack's, fenced by the handle's lease token (result null), scoped to the
 * queue of the URL. As in SQS, a well-formed handle always succeeds — whether the message was deleted,
 * was already gone, or the handle is stale (the message was received again since, or its visibility
 * timeout ran out: then the message is *not* deleted and will be received again, which SQS documents as
 * possible too). Only a handle that is not one of ours is an error (ReceiptHandleIsInvalid).
 */
async function deleteHandles(ctx: SqsContext, queue: string, items: Array<{ id: string; leaseToken: string }>) {
  if (items.length === 0) return;
  await ackTasks(ctx.op, queue, { complete: items.map((i) => ({ ...i, result: null })) });
}

/** DeleteMessage (see deleteHandles). */
export async function deleteMessage(input: unknown, ctx: SqsContext) {
  const request = parseInput(DeleteMessageInput, input);
  const queue = await requireQueue(ctx, request.QueueUrl);
  await deleteHandles(ctx, queue.name, [decodeReceiptHandle(request.ReceiptHandle)]);
  return {};
}

/** DeleteMessageBatch: one completeTasks statement; malformed handles fail their own entry only. */
export async function deleteMessageBatch(input: unknown, ctx: SqsContext) {
  const request = parseInput(DeleteMessageBatchInput, input);
  checkBatchEntries(request.Entries);
  const queue = await requireQueue(ctx, request.QueueUrl);
  const failed: BatchFailure[] = [];
  const valid: Array<{ entryId: string; id: string; leaseToken: string }> = [];
  for (const entry of request.Entries) {
    try {
      valid.push({ entryId: entry.Id, ...decodeReceiptHandle(entry.ReceiptHandle) });
    } catch (error) {
      if (!(error instanceof SqsError)) throw error;
      failed.push(batchFailure(entry.Id, error));
    }
  }
  await deleteHandles(
    ctx,
    queue.name,
    valid.map(({ id, leaseToken }) => ({ id, leaseToken })),
  );
  return { Successful: valid.map((v) => ({ Id: v.entryId })), Failed: failed };
}
