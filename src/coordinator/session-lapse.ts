import { MAX_BATCH } from "../contracts/limits";
import type { Change } from "../effects/changes";
import type { Env } from "../env";
import { queueRoute, routeShards } from "../shards/queue-route";

/** What lapsing a session's leases did: how many lapsed, and the change to report (tasks a cancel request
 * ended instead), or null. */
export interface SessionLapse {
  lapsed: number;
  change: Change | null;
}

/**
 * Lapses every lease worker session `session` holds on `queue` (the port's `sessionLeases`, on each shard the
 * queue spans): each lease's expiry becomes `now`, through the holder's own fenced extension — so it is
 * exactly a lease whose visibility timeout ran out (redelivered after the queue's expiry backoff, or dead
 * when its attempts are spent; the holder's later writes are `lease_lost`), and a task whose cancel was
 * requested ends cancelled. A lease acked or lapsed meanwhile fails its fence and is left alone.
 *
 * @example
 * const { lapsed, change } = await lapseSessionLeases(env, "emails", "k3JzQ9vX2mPq8RtW", Date.now());
 */
export async function lapseSessionLeases(env: Env, queue: string, session: string, now: number): Promise<SessionLapse> {
  const route = await queueRoute(env, queue, now);
  let lapsed = 0;
  const cancelled: string[] = [];
  for (const shard of routeShards(route)) {
    const held = await shard.store.sessionLeases(queue, session, now);
    // The extension's bound per statement.
    for (let first = 0; first < held.length; first += MAX_BATCH) {
      const items = held.slice(first, first + MAX_BATCH).map((i) => ({ ...i, visibilityTimeoutS: 0 }));
      for (const outcome of await shard.store.extendLeases(items, now, { queue })) {
        if (outcome.ok) lapsed++;
        else if (outcome.error.code === "task_cancelled") cancelled.push(outcome.id);
      }
    }
  }
  const change: Change | null =
    cancelled.length > 0 ? { kind: "cancelled", queue, ids: cancelled, freesFlowKey: true } : null;
  return { lapsed, change };
}
