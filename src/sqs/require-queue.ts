import { forgetPlacements } from "../shards/directory";
import { SqsError } from "./errors";
import type { SqsContext } from "./context";
import { findSqsQueue, type SqsQueue } from "./queue-registry";
import { queueFromUrl } from "./queue-url";

/**
 * The queue a QueueUrl names, or QueueDoesNotExist — what every operation on a queue starts with.
 *
 * @example
 * const queue = await requireQueue(ctx, input.QueueUrl);
 */
export async function requireQueue(ctx: SqsContext, url: unknown): Promise<SqsQueue> {
  const name = queueFromUrl(url);
  const queue = await findSqsQueue(await registryStore(ctx, name), name);
  if (!queue) throw new SqsError("QueueDoesNotExist", `The specified queue does not exist: ${name}`);
  return queue;
}

/** The store holding a queue's SQS attributes: its first partition's shard's (the config's home). */
export async function registryStore(ctx: SqsContext, name: string) {
  return (await ctx.route(name)).parts[0]!.shard.store;
}

/**
 * The store to write a queue's SQS attributes or tags on, from the directory as it is now. A route this
 * isolate cached (for up to ROUTE_CACHE_MS) from before another isolate moved partition 0 names the shard
 * the queue's row has left: a write there would be acknowledged and never read again. These writes are
 * rare, so each reads the directory afresh (one indexed read on the home database).
 *
 * @example
 * await addSqsTags(await registryStoreForWrite(ctx, "emails"), "emails", { team: "growth" }, ctx.now);
 */
export async function registryStoreForWrite(ctx: SqsContext, name: string) {
  forgetPlacements(name);
  return registryStore(ctx, name);
}
