import * as z from "zod";
import type { NewTask } from "../engine/store";
import { SQS_MAX_DELAY_S } from "../contracts/limits";
import { enqueue } from "../operations/enqueue";
import type { SqsContext } from "./context";
import { invalidParameter, SqsError } from "./errors";
import { batchFailure, checkBatchEntries, intIn, parseInput, type BatchFailure } from "./input";
import { md5Hex, md5OfMessageAttributes } from "./md5";
import { SQS_TASK_TYPE, sqsPayload } from "./message";
import { isFifo } from "./queue-attributes";
import type { SqsQueue } from "./queue-registry";
import { requireQueue } from "./require-queue";
import { sha256Hex } from "./sigv4";

const AttributeValue = z.object({
  DataType: z.string(),
  StringValue: z.string().optional(),
  BinaryValue: z.string().optional(),
});

const MessageFields = {
  MessageBody: z.string(),
  DelaySeconds: intIn(0, SQS_MAX_DELAY_S).optional(),
  MessageAttributes: z.record(z.string(), AttributeValue).optional(),
  MessageDeduplicationId: z.string().min(1).max(128).optional(),
  MessageGroupId: z.string().min(1).max(128).optional(),
};

const SendMessageInput = z.object({ QueueUrl: z.string(), ...MessageFields });
const SendMessageBatchInput = z.object({
  QueueUrl: z.string(),
  Entries: z.array(z.object({ Id: z.string() }).loose()),
});
const BatchEntry = z.object({ Id: z.string(), ...MessageFields });

type MessageInput = z.infer<typeof BatchEntry>;

/**
 * The task a message becomes. FIFO queues (`.fifo`): MessageGroupId is required and becomes the task's
 * group; MessageDeduplicationId (or, without one, the SHA-256 of the body: content-based deduplication)
 * becomes its dedupe key — edgeq deduplicates among live tasks, not for SQS's fixed 5 minutes. Standard
 * queues take neither, as SQS.
 */
async function taskOf(queue: SqsQueue, message: MessageInput, now: number): Promise<NewTask> {
  const fifo = isFifo(queue.name);
  if (fifo && message.MessageGroupId === undefined) {
    throw new SqsError("MissingParameter", "The request must contain the parameter MessageGroupId.");
  }
  if (!fifo && (message.MessageGroupId !== undefined || message.MessageDeduplicationId !== undefined)) {
    throw invalidParameter(
      message.MessageGroupId !== undefined ? "MessageGroupId" : "MessageDeduplicationId",
      "The request includes a parameter that is not valid for this queue type.",
    );
  }
  if (fifo && message.DelaySeconds !== undefined && message.DelaySeconds > 0) {
    throw invalidParameter(
      "DelaySeconds",
      "The request includes a parameter that is not valid for this queue type (FIFO queues take the queue's delay only).",
    );
  }
  const payload = sqsPayload(message.MessageBody, message.MessageAttributes);
  const delayS = message.DelaySeconds ?? queue.delayS;
  return {
    type: SQS_TASK_TYPE,
    payload,
    runAt: now + delayS * 1000,
    group: message.MessageGroupId,
    // A message group is a flow-control key: an SQS FIFO queue's config makes keys ordered (issue 30).
    key: message.MessageGroupId,
    dedupeKey: fifo ? (message.MessageDeduplicationId ?? (await sha256Hex(message.MessageBody))) : undefined,
  };
}

/** The success entry of a sent message: its id (the task id) and the digests the SDK verifies. */
async function sent(message: MessageInput, id: string) {
  const attributesMd5 = await md5OfMessageAttributes(message.MessageAttributes);
  return {
    MessageId: id,
    MD5OfMessageBody: await md5Hex(message.MessageBody),
    ...(attributesMd5 ? { MD5OfMessageAttributes: attributesMd5 } : {}),
  };
}

export async function sendMessage(input: unknown, ctx: SqsContext) {
  const message = parseInput(SendMessageInput, input);
  const queue = await requireQueue(ctx, message.QueueUrl);
  const task = await taskOf(queue, { ...message, Id: "0" }, ctx.now);
  const result = await enqueue(ctx.op, queue.name, [task]);
  return sent({ ...message, Id: "0" }, result.tasks[0]!.id);
}

/**
 * SendMessageBatch -> one enqueueTasks call (one D1 batch) for every entry that is valid; each invalid
 * entry is reported in `Failed` with its own code, and does not stop the others.
 */
export async function sendMessageBatch(input: unknown, ctx: SqsContext) {
  const request = parseInput(SendMessageBatchInput, input);
  checkBatchEntries(request.Entries);
  const queue = await requireQueue(ctx, request.QueueUrl);
  const failed: BatchFailure[] = [];
  const accepted: Array<{ entry: MessageInput; task: NewTask }> = [];
  for (const raw of request.Entries) {
    try {
      const entry = parseInput(BatchEntry, raw);
      accepted.push({ entry, task: await taskOf(queue, entry, ctx.now) });
    } catch (error) {
      if (!(error instanceof SqsError)) throw error;
      failed.push(batchFailure(raw.Id, error));
    }
  }
  const result = await enqueue(
    ctx.op,
    queue.name,
    accepted.map((a) => a.task),
  );
  const successful = await Promise.all(
    accepted.map(async ({ entry }, i) => ({ Id: entry.Id, ...(await sent(entry, result.tasks[i]!.id)) })),
  );
  return { Successful: successful, Failed: failed };
}
