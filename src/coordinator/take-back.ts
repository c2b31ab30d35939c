import type { Change } from "../effects/changes";
import type { FencedItem, LapsedHandOut } from "../engine/store";
import type { Env } from "../env";
import { ackOnRoute } from "../shards/ack-routing";
import { revokeOnQueue } from "../shards/queue-ops";
import { queueRoute, routeShards } from "../shards/queue-route";

/** What `lapseHandOuts` did: the hand-outs it took back, and how many of the items, from the first, it
 * looked at (the rest are still to be looked at: it had taken as many as it was asked for). */
export interface LapsedHandOuts {
  tasks: LapsedHandOut[];
  examined: number;
}

/**
 * Takes back hand-outs a coordinator gave and nobody claimed — a withdrawn poll's, after it was answered, or
 * ones left unclaimed while other polls wait (hand-outs.ts): their claim window ends now, so the next lease
 * takes them over (attempt refunded), and until one does their holder may still claim or ack them
 * (engine/lapse.ts). At most `limit`, the first unclaimed ones in `items`' order. Each shard the queue spans
 * is asked (only the one holding a task changes it); where one took `limit`, items after its last are
 * reported not examined — conservatively, as a shard that took fewer looked at all it holds.
 *
 * @example
 * const { tasks, examined } = await lapseHandOuts(env, "emails", [{ id, leaseToken }], Date.now(), 1);
 */
export async function lapseHandOuts(
  env: Env,
  queue: string,
  items: FencedItem[],
  now: number,
  limit: number = items.length,
): Promise<LapsedHandOuts> {
  if (items.length === 0 || limit < 1) return { tasks: [], examined: 0 };
  const route = await queueRoute(env, queue, now);
  const perShard = await Promise.all(routeShards(route).map((s) => s.store.lapseUnclaimed(items, now, limit)));
  const position = new Map(items.map((item, k) => [`${item.id} ${item.leaseToken}`, k]));
  let examined = items.length;
  for (const taken of perShard) {
    if (taken.length < limit) continue;
    const last = Math.max(...taken.map((t) => position.get(`${t.id} ${t.lease_token}`) ?? items.length - 1));
    examined = Math.min(examined, last + 1);
  }
  return { tasks: perShard.flat(), examined };
}

/**
 * Takes back provisional leases made for a poll that was withdrawn while they were in flight — the poll
 * answered with nothing, so no client holds their tokens: pending at once, attempt refunded. A lease claimed
 * meanwhile is left alone (engine/revoke.ts). Returns the change to report, or null.
 *
 * @example
 * const change = await revokeUndelivered(env, "emails", 0, [{ id, leaseToken }], Date.now());
 */
export async function revokeUndelivered(
  env: Env,
  queue: string,
  part: number,
  items: FencedItem[],
  now: number,
): Promise<Change | null> {
  if (items.length === 0) return null;
  const tasks = await revokeOnQueue(await queueRoute(env, queue, now), items, now);
  return tasks.length > 0 ? { kind: "revoked", queue, part, tasks } : null;
}

/**
 * Releases tasks a poll's own first lease took (claimed leases) when the poll was withdrawn while that lease
 * was in flight: pending at once, attempt refunded, as the client's own release would. Returns the change to
 * report.
 *
 * @example
 * const change = await handBackLeased(env, "emails", [{ id, leaseToken }], Date.now());
 */
export async function handBackLeased(env: Env, queue: string, items: FencedItem[], now: number): Promise<Change> {
  const outcomes = await ackOnRoute(await queueRoute(env, queue, now), items, (store, group) =>
    store.releaseTasks(group, now),
  );
  return { kind: "acked", outcomes, kinds: outcomes.map(() => "release") };
}
