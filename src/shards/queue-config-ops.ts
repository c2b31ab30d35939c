import type { Env } from "../env";
import { EdgeqError } from "../contracts/errors";
import type { QueueConfig, WhyUnavailable } from "../engine/store";
import { forgetPlacements } from "./directory";
import { queueRoute, type QueueRoute } from "./queue-route";
import { allShards } from "./shard-set";

/** A queue's configuration as the API shows it: the stored config plus its partition count (directory). */
export type QueueSettings = QueueConfig & { partitions: number };

/** The queue's config, read where its first partition lives (every shard holds a copy). */
export async function queueConfigOf(route: QueueRoute): Promise<QueueSettings> {
  return { ...(await route.parts[0]!.shard.store.getQueueConfig(route.queue)), partitions: route.parts.length };
}

/**
 * Sets a queue's config. Validated and stored on the first partition's shard first (a refused config
 * stores nothing anywhere); then `partitions` grows the directory; then every other shard gets the whole
 * merged config: statements read the config of their own database — a lease its visibility timeout, a
 * completion its children's max_attempts (a child of another queue is created beside its parent), the
 * pruner its retention. Configs are written rarely, so a copy per shard costs little. Partitions only
 * grow: shrinking would strand the tasks of the removed ones.
 */
export async function putQueueConfigOf(
  env: Env,
  queue: string,
  patch: Partial<QueueSettings>,
  now: number,
  processors: readonly string[],
  whyUnavailable?: WhyUnavailable,
): Promise<QueueSettings> {
  const { partitions, ...configPatch } = patch;
  let route = await queueRoute(env, queue, now);
  if (partitions !== undefined && partitions < route.parts.length) {
    throw new EdgeqError(
      "invalid_request",
      `partitions: the queue has ${route.parts.length} and partitions can only grow (got ${partitions})`,
    );
  }
  const first = route.parts[0]!.shard;
  const next = await first.store.putQueueConfig(queue, configPatch, now, processors, whyUnavailable);
  if (partitions !== undefined && partitions > route.parts.length) {
    forgetPlacements(queue);
    route = await queueRoute(env, queue, now, partitions);
  }
  await Promise.all(
    allShards(env)
      .filter((s) => s.name !== first.name)
      .map((s) => s.store.storeQueueConfig(queue, next, now)),
  );
  return { ...next, partitions: route.parts.length };
}

/** Copies the config stored on the queue's first shard to every other shard (after a write made there). */
export async function copyConfigToShards(env: Env, route: QueueRoute, now: number): Promise<void> {
  const first = route.parts[0]!.shard;
  const others = allShards(env).filter((s) => s.name !== first.name);
  if (others.length === 0) return;
  const config = await first.store.getQueueConfig(route.queue);
  await Promise.all(others.map((s) => s.store.storeQueueConfig(route.queue, config, now)));
}
