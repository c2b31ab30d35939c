import * as z from "zod";
import { MAX_ATTEMPTS_LIMIT, SQS_MAX_LIST_RESULTS } from "../contracts/limits";
import type { SettledDependent } from "../engine/store";
import { mergeShardRows } from "../shards/cross-shard";
import { cancelQueue } from "../operations/queue";
import { copyConfigToShards } from "../shards/queue-config-ops";
import { cancelQueueOf } from "../shards/queue-ops";
import { routeShards } from "../shards/queue-route";
import type { SqsContext } from "./context";
import { invalidParameter, SqsError } from "./errors";
import { intIn, parseInput } from "./input";
import { isFifo, parseQueueAttributes, renderQueueAttributes, sameAttributes } from "./queue-attributes";
import {
  countSqsMessages,
  findSqsQueue,
  listSqsQueueNames,
  purgeSqsQueue,
  retireSqsQueue,
  saveSqsQueue,
} from "./queue-registry";
import { addTags, checkTags } from "./queue-tags";
import { checkQueueName, queueUrl } from "./queue-url";
import { registryStore, registryStoreForWrite, requireQueue } from "./require-queue";

/**
 * Config a queue created over SQS starts with, where SQS behaves differently from edgeq's defaults:
 * - max_attempts MAX_ATTEMPTS_LIMIT: an SQS queue without a redrive policy redelivers indefinitely; edgeq
 *   bounds attempts, so it gets the most there are (a RedrivePolicy sets fewer);
 * - backoff 1 s (base and cap): SQS makes a message visible again when its visibility timeout ends, with
 *   no backoff; 1 s is the smallest backoff edgeq's config takes, so an expired receive is redelivered
 *   1 s after its timeout rather than after edgeq's growing 10 s .. 1 h backoff.
 */
const SQS_CREATED_CONFIG = { max_attempts: MAX_ATTEMPTS_LIMIT, backoff_base_s: 1, backoff_cap_s: 1 };

const Attributes = z.record(z.string(), z.string());
const CreateQueueInput = z
  .object({
    QueueName: z.string(),
    Attributes: Attributes.optional(),
    tags: z.record(z.string(), z.string()).optional(),
  })
  .loose();
const GetQueueUrlInput = z.object({ QueueName: z.string() }).loose();
const QueueUrlInput = z.object({ QueueUrl: z.string() });
const ListQueuesInput = z.object({
  QueueNamePrefix: z.string().optional(),
  MaxResults: intIn(1, SQS_MAX_LIST_RESULTS).optional(),
  NextToken: z.string().optional(),
});
const GetAttributesInput = z.object({ QueueUrl: z.string(), AttributeNames: z.array(z.string()).optional() });
const SetAttributesInput = z.object({ QueueUrl: z.string(), Attributes });

/**
 * CreateQueue: writes the queue's config (SQS_CREATED_CONFIG under the attributes given). Creating a
 * queue that exists — created before, or used natively — answers its URL when the attributes given match
 * what it has, and QueueNameExists when they differ, as SQS. A name ending in `.fifo` must say
 * FifoQueue=true and vice versa. `tags` (src/sqs/queue-tags.ts) tag the queue it creates; for a queue that
 * exists they are checked and not applied (TagQueue changes an existing queue's tags).
 */
export async function createQueue(input: unknown, ctx: SqsContext) {
  const request = parseInput(CreateQueueInput, input);
  const name = checkQueueName(request.QueueName);
  const attributes = request.Attributes ?? {};
  if (isFifo(name) && attributes.FifoQueue !== "true") {
    throw invalidParameter("FifoQueue", "a queue whose name ends in .fifo must be created with FifoQueue=true");
  }
  const patch = parseQueueAttributes(name, attributes);
  if (request.tags !== undefined) checkTags(request.tags, "tags");
  const store = await registryStoreForWrite(ctx, name);
  const existing = await findSqsQueue(store, name);
  if (existing) {
    if (!sameAttributes(existing, patch)) {
      throw new SqsError(
        "QueueNameExists",
        `A queue already exists with the same name and a different value for attribute(s) given: ${name}`,
      );
    }
  } else {
    // A FIFO queue's message groups are ordered keys (docs/flow-control.md): per group, the next message is
    // not received until the one before it is deleted or its visibility ends, as SQS FIFO promises.
    const fifo = isFifo(name) ? { flow: { default: { ordered: true } } } : {};
    const config = { ...SQS_CREATED_CONFIG, ...fifo, ...patch.config };
    await saveSqsQueue(store, name, { ...patch, config }, ctx.now, ctx.op.processors.types());
    await copyConfigToShards(ctx.env, await ctx.route(name), ctx.now);
    if (request.tags !== undefined) await addTags(ctx, name, request.tags, "tags");
  }
  return { QueueUrl: queueUrl(ctx.origin, name) };
}

/** GetQueueUrl: the URL of a queue that exists, else QueueDoesNotExist. */
export async function getQueueUrl(input: unknown, ctx: SqsContext) {
  const name = checkQueueName(parseInput(GetQueueUrlInput, input).QueueName);
  if (!(await findSqsQueue(await registryStore(ctx, name), name))) {
    throw new SqsError("QueueDoesNotExist", `The specified queue does not exist: ${name}`);
  }
  return { QueueUrl: queueUrl(ctx.origin, name) };
}

/** ListQueues: every queue that exists, by name, paged with MaxResults / NextToken (the last name seen). */
export async function listQueues(input: unknown, ctx: SqsContext) {
  const request = parseInput(ListQueuesInput, input);
  const perShard = await Promise.all(ctx.stores.map((store) => listSqsQueueNames(store, request.QueueNamePrefix)));
  let names = [...new Set(perShard.flat())].sort();
  if (request.NextToken !== undefined) {
    let after: string;
    try {
      after = atob(request.NextToken);
    } catch {
      throw new SqsError("InvalidParameterValue", "Value for parameter NextToken is invalid.");
    }
    names = names.filter((n) => n > after);
  }
  const limit = request.MaxResults ?? SQS_MAX_LIST_RESULTS;
  const page = names.slice(0, limit);
  const more = request.MaxResults !== undefined && names.length > limit;
  return {
    QueueUrls: page.map((n) => queueUrl(ctx.origin, n)),
    ...(more ? { NextToken: btoa(page.at(-1)!) } : {}),
  };
}

/**
 * DeleteQueue: config gone, live tasks cancelled, finished tasks deleted (src/sqs/queue-registry.ts). The
 * tasks cancelled at once are reported as a queue cancel's are, and their `cancelled` events published
 * before the delete removes them (the event hub describes a task from its row). Each step is idempotent;
 * finished tasks a DeleteQueue failing half-way leaves behind are pruned by retention.
 */
export async function deleteQueue(input: unknown, ctx: SqsContext) {
  const queue = await requireQueue(ctx, parseInput(QueueUrlInput, input).QueueUrl);
  const route = await ctx.route(queue.name);
  const shards = routeShards(route);
  for (const shard of shards) await retireSqsQueue(shard.store, queue.name);
  // Cancelled as a queue cancel is (pending ones at once, leased ones by cancel request), with the dependents
  // those cancels settled, read on the same shard.
  const cancelled: string[] = [];
  const dependents: SettledDependent[] = [];
  await cancelQueueOf(route, {}, ctx.now, cancelled, dependents);
  await ctx.op.effects
    .follow({ kind: "cancelled", queue: queue.name, ids: cancelled })
    // The queue is deleted either way; a lost event is what a stream's resync is for.
    .catch((error: unknown) => console.error(`sqs: publishing ${queue.name}'s cancelled tasks failed`, error));
  // Dependents elsewhere outlive the queue: woken and published now, not at the next tick.
  if (dependents.length > 0) ctx.op.effects.after({ kind: "dependents-settled", dependents });
  for (const shard of shards) await purgeSqsQueue(shard.store, queue.name, ctx.now);
  return {};
}

/**
 * PurgeQueue -> the queue cancel of `POST /v1/queues/{queue}/cancel` (src/operations/queue.ts): pending
 * messages are cancelled at once, in-flight ones by cancel request (their holder's DeleteMessage still
 * succeeds; a ChangeMessageVisibility ends them). The tasks stay inspectable as `cancelled` until
 * retention prunes them.
 */
export async function purgeQueue(input: unknown, ctx: SqsContext) {
  const queue = await requireQueue(ctx, parseInput(QueueUrlInput, input).QueueUrl);
  await cancelQueue(ctx.op, queue.name, {});
  return {};
}

/** GetQueueAttributes (see src/sqs/queue-attributes.ts); no AttributeNames answers none, as SQS. */
export async function getQueueAttributes(input: unknown, ctx: SqsContext) {
  const request = parseInput(GetAttributesInput, input);
  const queue = await requireQueue(ctx, request.QueueUrl);
  const wanted = request.AttributeNames ?? [];
  if (wanted.length === 0) return {};
  const perShard = await Promise.all(
    routeShards(await ctx.route(queue.name)).map((s) => countSqsMessages(s.store, queue.name, ctx.now)),
  );
  const counts = mergeShardRows(
    perShard.map((c) => [c]),
    [],
  )[0]!;
  return { Attributes: renderQueueAttributes(queue, counts, ctx.region, wanted) };
}

/** SetQueueAttributes: the queue's config through the engine's putQueueConfig. */
export async function setQueueAttributes(input: unknown, ctx: SqsContext) {
  const request = parseInput(SetAttributesInput, input);
  const queue = await requireQueue(ctx, request.QueueUrl);
  const store = await registryStoreForWrite(ctx, queue.name);
  const route = await ctx.route(queue.name);
  await saveSqsQueue(
    store,
    queue.name,
    parseQueueAttributes(queue.name, request.Attributes),
    ctx.now,
    ctx.op.processors.types(),
  );
  await copyConfigToShards(ctx.env, route, ctx.now);
  return {};
}
