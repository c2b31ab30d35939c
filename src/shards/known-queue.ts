import { EdgeqError } from "../contracts/errors";
import type { Env } from "../env";
import { readRoute, routeShards } from "./queue-route";

/**
 * Refuses, `404 not_found`, a queue that has never been used: no stored config and no task (in any state)
 * on any database holding it — the rule GET /v1/queues lists queues by. For the calls about where a queue
 * lives (placement, move), which have nothing to show or move for a name never used; a move of one would
 * also place it, creating its directory rows. Reads and enqueues of any valid name stay open (stats answer
 * zeros, config the defaults, an enqueue creates the queue). One read per database of the queue's route.
 *
 * @example
 * await requireKnownQueue(env, "emails");
 */
export async function requireKnownQueue(env: Env, queue: string): Promise<void> {
  const shards = routeShards(await readRoute(env, queue));
  const found = await Promise.all(shards.map((shard) => shard.store.hasQueueData(queue)));
  if (!found.includes(true)) {
    throw new EdgeqError("not_found", `queue ${queue} not found: it has no task and no stored config`);
  }
}
