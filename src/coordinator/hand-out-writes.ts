import type { Change } from "../effects/changes";
import type { FencedItem, EndedHandOut } from "../engine/store";
import type { Env } from "../env";
import { ackOnRoute } from "../shards/ack-routing";
import { returnUndeliveredOnQueue } from "../shards/queue-ops";
import { queueRoute, routeShards } from "../shards/queue-route";

/**
 * A long poll's coordinator's writes on the queue's shards for the leases it handed out (the port's
 * HandOutWrites, and the holder's release): `returnUndelivered`, `endClaimWindows`, `releaseClaimed`.
 */

/** What `endClaimWindows` did: the hand-outs whose claim window it ended, and how many of the items, from the first, it
 * looked at (the rest are still to be looked at: it had taken as many as it was asked for). */
export interface EndedClaimWindows {
  tasks: EndedHandOut[];
  examined: number;
}

/**
 * Ends the claim window of hand-outs a coordinator gave and nobody claimed — a withdrawn poll's, after it was answered, or
 * ones left unclaimed while other polls wait (hand-outs.ts): their claim window ends now, so the next lease
 * takes them over (attempt refunded), and until one does their holder may still claim or ack them
 * (engine/end-claim-windows.ts). At most `limit`, the first unclaimed ones in `items`' order. Each shard the queue spans
 * is asked (only the one holding a task changes it); where one took `limit`, items after its last are
 * reported not examined — conservatively, as a shard that took fewer looked at all it holds.
 *
 * @example
 * const { tasks, examined } = await endClaimWindows(env, "emails", [{ id, leaseToken }], Date.now(), 1);
 */
export async function endClaimWindows(
  env: Env,
  queue: string,
  items: FencedItem[],
  now: number,
  limit: number = items.length,
): Promise<EndedClaimWindows> {
  if (items.length === 0 || limit < 1) return { tasks: [], examined: 0 };
  const route = await queueRoute(env, queue, now);
  const perShard = await Promise.all(routeShards(route).map((s) => s.store.endClaimWindows(items, now, limit)));
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
 * Returns to pending the provisional leases made for a poll that was withdrawn while they were in flight — the poll
 * answered with nothing, so no client holds their tokens: pending at once, attempt refunded. A lease claimed
 * meanwhile is left alone (engine/return-undelivered.ts). Returns the change to report, or null.
 *
 * @example
 * const change = await returnUndelivered(env, "emails", 0, [{ id, leaseToken }], Date.now());
 */
export async function returnUndelivered(
  env: Env,
  queue: string,
  part: number,
  items: FencedItem[],
  now: number,
): Promise<Change | null> {
  if (items.length === 0) return null;
  const tasks = await returnUndeliveredOnQueue(await queueRoute(env, queue, now), items, now);
  return tasks.length > 0 ? { kind: "undelivered-returned", queue, part, tasks } : null;
}

/**
 * Releases tasks a poll's own first lease took (claimed leases) when the poll was withdrawn while that lease
 * was in flight: pending at once, attempt refunded, as the client's own release would. Returns the change to
 * report.
 *
 * @example
 * const change = await releaseClaimed(env, "emails", [{ id, leaseToken }], Date.now());
 */
export async function releaseClaimed(env: Env, queue: string, items: FencedItem[], now: number): Promise<Change> {
  const outcomes = await ackOnRoute(await queueRoute(env, queue, now), items, (store, group) =>
    store.releaseTasks(group, now),
  );
  return { kind: "acked", outcomes, kinds: outcomes.map(() => "release") };
}
