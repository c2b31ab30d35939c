import * as z from "zod";
import type { StoredTask } from "../contracts/stored-task";
import { leaseOrder } from "../contracts/lease-order";
import { MAX_VISIBILITY_TIMEOUT_S, MAX_WAIT_S, SQS_MAX_BATCH_ENTRIES } from "../contracts/limits";
import { extendTaskLeases } from "../operations/ack";
import { leaseRows } from "../operations/lease";
import type { SqsContext } from "./context";
import { intIn, parseInput } from "./input";
import { md5Hex, md5OfMessageAttributes } from "./md5";
import { messageOfTask, selectAttributes } from "./message";
import { isFifo } from "./queue-attributes";
import { encodeReceiptHandle } from "./receipt-handle";
import { requireQueue } from "./require-queue";

const ReceiveMessageInput = z.object({
  QueueUrl: z.string(),
  MaxNumberOfMessages: intIn(1, SQS_MAX_BATCH_ENTRIES).optional(),
  // SQS allows 0 (visible again at once); edgeq leases last at least 1 s.
  VisibilityTimeout: intIn(1, MAX_VISIBILITY_TIMEOUT_S).optional(),
  WaitTimeSeconds: intIn(0, MAX_WAIT_S).optional(),
  AttributeNames: z.array(z.string()).optional(),
  MessageSystemAttributeNames: z.array(z.string()).optional(),
  MessageAttributeNames: z.array(z.string()).optional(),
  ReceiveRequestAttemptId: z.string().optional(),
});

/** The system attributes a message can carry, from its task row. */
function systemAttributes(row: StoredTask, queue: string): Record<string, string> {
  const attributes: Record<string, string> = {
    ApproximateReceiveCount: String(row.attempts),
    SentTimestamp: String(row.createdAt),
    ApproximateFirstReceiveTimestamp: String(row.startedAt ?? row.updatedAt),
  };
  if (isFifo(queue)) {
    if (row.groupKey !== null) attributes.MessageGroupId = row.groupKey;
    if (row.dedupeKey !== null) attributes.MessageDeduplicationId = row.dedupeKey;
  }
  return attributes;
}

/** The requested subset of system attributes ("All" or names). */
function pickSystem(all: Record<string, string>, wanted: string[]): Record<string, string> {
  if (wanted.includes("All")) return all;
  return Object.fromEntries(Object.entries(all).filter(([name]) => wanted.includes(name)));
}

/**
 * Leases for an SQS receive, and claims what it hands out. With WaitTimeSeconds 0 the lease is direct (a
 * claimed lease). With a wait it goes through the queue's coordinator (src/coordinator/long-poll.ts), which
 * answers a request that waited with *provisional* leases: leasable again unless claimed within
 * CLAIM_WINDOW_S, because the client may have hung up. An SQS client never claims — in SQS a message handed to a receive
 * is invisible for its whole visibility timeout, whether or not the client was still there to read it —
 * so the receive claims them itself before answering (one extendLeases statement, which also restarts
 * each lease's visibility timeout from now). A message that cannot be claimed (a cancel arrived
 * meanwhile) is left out of the answer.
 */
async function leaseForReceive(
  ctx: SqsContext,
  request: { queue: string; max: number; visibilityTimeoutS: number; holder: string },
  waitS: number,
): Promise<StoredTask[]> {
  const { queue, ...ask } = request;
  const leased = await leaseRows(ctx.op, queue, { ...ask, waitMs: waitS * 1000 });
  const provisional = leased.filter((t) => t.claimBy !== null);
  if (provisional.length === 0) return leased;
  // Claimed at once (SQS has no claim step), at the time the answer arrived, not the request's start.
  const outcomes = await extendTaskLeases(
    { ...ctx.op, now: ctx.clock() },
    queue,
    provisional.map((t) => ({ id: t.id, leaseToken: t.leaseToken!, visibilityTimeoutS: request.visibilityTimeoutS })),
  );
  const claimed = new Map(outcomes.filter((o) => o.ok).map((o) => [o.id, o]));
  return leased
    .filter((t) => t.claimBy === null || claimed.has(t.id))
    .map((t) => {
      const outcome = claimed.get(t.id);
      return outcome?.ok ? { ...t, claimBy: null, leaseExpiresAt: outcome.lease_expires_at } : t;
    })
    .sort(leaseOrder);
}

/**
 * ReceiveMessage -> leaseTasks, or the coordinator's long poll when WaitTimeSeconds (or the queue's
 * ReceiveMessageWaitTimeSeconds) is above 0. Each message's receipt handle carries its task id and lease
 * token; ApproximateReceiveCount is the task's attempts.
 */
export async function receiveMessage(input: unknown, ctx: SqsContext) {
  const request = parseInput(ReceiveMessageInput, input);
  const queue = await requireQueue(ctx, request.QueueUrl);
  const leased = await leaseForReceive(
    ctx,
    {
      queue: queue.name,
      max: request.MaxNumberOfMessages ?? 1,
      visibilityTimeoutS: request.VisibilityTimeout ?? queue.config.visibility_timeout_s,
      holder: `sqs:${ctx.accessKeyId}`,
    },
    request.WaitTimeSeconds ?? queue.receiveWaitS,
  );
  const wantedSystem = [...(request.AttributeNames ?? []), ...(request.MessageSystemAttributeNames ?? [])];
  const messages = await Promise.all(
    leased.map(async (row) => {
      const { body, attributes } = messageOfTask(row);
      const selected = selectAttributes(attributes, request.MessageAttributeNames);
      const system = pickSystem(systemAttributes(row, queue.name), wantedSystem);
      const attributesMd5 = await md5OfMessageAttributes(selected);
      return {
        MessageId: row.id,
        ReceiptHandle: encodeReceiptHandle(row.id, row.leaseToken!),
        MD5OfBody: await md5Hex(body),
        Body: body,
        ...(Object.keys(system).length > 0 ? { Attributes: system } : {}),
        ...(attributesMd5 ? { MD5OfMessageAttributes: attributesMd5, MessageAttributes: selected } : {}),
      };
    }),
  );
  return { Messages: messages };
}
