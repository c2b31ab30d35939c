import type { Env } from "../env";
import { ensurePlacements, existingPlacements, fnv1a, forgetPlacements, type Placement } from "./directory";
import { HOME_SHARD, readShard, shardOf, type Shard } from "./shard-set";

/** One partition of a queue, resolved to its databases. */
export interface PartRoute {
  part: number;
  slot: number;
  /** Where the partition lives: its writes and leases go here. */
  shard: Shard;
  /** During a move (and its settle period): the shard it is leaving, still consulted for tasks. */
  movingFrom: Shard | null;
}

/** Where a queue's tasks are: one part, or `partitions` parts (src/shards/partitioned.ts). */
export interface QueueRoute {
  queue: string;
  parts: PartRoute[];
  /** The same route read again, bypassing this isolate's cache (ROUTE_CACHE_MS): for a call that missed a
   * task which may have moved since the route was read (src/shards/ack-routing.ts). */
  refresh?: () => Promise<QueueRoute>;
}

function toRoute(env: Env, queue: string, rows: Placement[]): QueueRoute {
  return {
    queue,
    refresh: async () => {
      forgetPlacements(queue);
      return toRoute(env, queue, await ensurePlacements(env, queue, null, Date.now()));
    },
    parts: rows.map((row) => ({
      part: row.part,
      slot: row.slot,
      shard: shardOf(env, row.shard),
      movingFrom: row.movingFrom ? shardOf(env, row.movingFrom) : null,
    })),
  };
}

/**
 * The queue's route for writes (enqueue, lease, config): its partitions, created on first use.
 *
 * @example
 * const route = await queueRoute(env, "emails", now);
 */
export async function queueRoute(
  env: Env,
  queue: string,
  now: number,
  parts: number | null = null,
): Promise<QueueRoute> {
  return toRoute(env, queue, await ensurePlacements(env, queue, parts, now));
}

/**
 * The queue's route for reads: its partitions if it has any, else the home database (a queue never
 * written through the directory can only have data there). Creates nothing. With `replica`, each shard
 * is opened through D1's Sessions API (src/shards/shard-set.ts readShard).
 */
export async function readRoute(env: Env, queue: string, opts: { replica?: boolean } = {}): Promise<QueueRoute> {
  const rows = await existingPlacements(env, queue);
  const open = (name: string) => (opts.replica ? readShard(env, name) : shardOf(env, name));
  if (rows.length === 0) return { queue, parts: [{ part: 0, slot: 0, shard: open(HOME_SHARD), movingFrom: null }] };
  return {
    queue,
    parts: rows.map((row) => ({
      part: row.part,
      slot: row.slot,
      shard: open(row.shard),
      movingFrom: row.movingFrom ? open(row.movingFrom) : null,
    })),
  };
}

/** Every distinct shard holding the queue's tasks (each part's, and any it is moving from), in part order. */
export function routeShards(route: QueueRoute): Shard[] {
  const seen = new Map<string, Shard>();
  for (const part of route.parts) {
    if (!seen.has(part.shard.name)) seen.set(part.shard.name, part.shard);
    if (part.movingFrom && !seen.has(part.movingFrom.name)) seen.set(part.movingFrom.name, part.movingFrom);
  }
  return [...seen.values()];
}

let roundRobin = Math.floor(Math.random() * 1_000_000);

/**
 * The part a new task joins: by its flow-control key (so a key's tasks, and its state in flow_keys, live on
 * one partition's database and its limits hold there: docs/flow-control.md), else its idempotency, debounce or
 * singleton key (so the key is claimed atomically on one database: docs/uniqueness-and-expiry.md), else its
 * dedupe key, else its group (so a dedupe key is unique queue-wide and a group's tasks keep their order on one
 * partition), else round robin. A flow-keyed task's dedupe key, or key of uniqueness over time, is unique
 * within its flow key's partition only.
 */
export function pickPart(
  route: QueueRoute,
  task: { key?: string; dedupeKey?: string; group?: string; unique?: { key: string } },
): PartRoute {
  const n = route.parts.length;
  if (n === 1) return route.parts[0]!;
  const key = task.key ?? task.unique?.key ?? task.dedupeKey ?? task.group;
  const index = key !== undefined ? fnv1a(key) % n : roundRobin++ % n;
  return route.parts[index]!;
}

/** A rotating start for leases over partitions, so no partition is always drained first. */
export function nextLeaseOffset(n: number): number {
  return roundRobin++ % Math.max(n, 1);
}
