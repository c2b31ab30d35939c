import type { Change } from "../effects/changes";
import type { FencedItem } from "../engine/ack";
import { releaseTasks } from "../engine/release";
import type { Env } from "../env";
import { ackOnRoute } from "../shards/ack-routing";
import { revokeOnQueue } from "../shards/queue-ops";
import { queueRoute } from "../shards/queue-route";

/**
 * Takes back provisional leases a coordinator handed out and nobody claimed (a withdrawn poll's, or one left
 * unclaimed while other polls wait: hand-outs.ts): pending at once, attempt refunded. A lease claimed
 * meanwhile is left with its client (engine/revoke.ts). Returns the change to report, or null.
 *
 * @example
 * const change = await takeBackUnclaimed(env, "emails", 0, [{ id, leaseToken }], Date.now());
 */
export async function takeBackUnclaimed(
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
  const outcomes = await ackOnRoute(await queueRoute(env, queue, now), items, (db, group) =>
    releaseTasks(db, group, now),
  );
  return { kind: "acked", outcomes, kinds: outcomes.map(() => "release") };
}
