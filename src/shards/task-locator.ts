import { sql } from "drizzle-orm";
import type { Env } from "../env";
import { EdgeqError, NotFoundError } from "../contracts/errors";
import type { AckOutcome } from "../engine/store";
import { placementBySlot, readPlacementBySlot } from "./directory";
import { HOME_SHARD, homeShard, shardNames, shardOf, type Shard } from "./shard-set";
import { decodeSlot } from "./task-slot";

/**
 * The shards that may hold a task, most likely first, evaluated lazily: the shard of the slot its id
 * carries (and, during a move, the shard it is leaving); then its recorded address (task_addresses: ids
 * that carry no slot); then the home database (ids from before sharding). A task in one of them is found
 * with one read; only a miss costs the next. Never a fan-out over every shard.
 */
export async function* taskShards(env: Env, id: string): AsyncGenerator<Shard> {
  const seen = new Set<string>();
  const fresh = (name: string | null | undefined) => name != null && !seen.has(name) && (seen.add(name), true);
  if (shardNames(env).length === 1) {
    yield homeShard(env);
    return;
  }
  const slot = decodeSlot(id);
  const placement = slot === null ? null : await placementBySlot(env, slot);
  if (fresh(placement?.shard)) yield shardOf(env, placement!.shard);
  if (fresh(placement?.movingFrom)) yield shardOf(env, placement!.movingFrom!);
  const address = await homeShard(env).db.get<{ slot: number }>(sql`SELECT slot FROM task_addresses WHERE id = ${id}`);
  const addressed = address ? await placementBySlot(env, address.slot) : null;
  if (fresh(addressed?.shard)) yield shardOf(env, addressed!.shard);
  if (fresh(addressed?.movingFrom)) yield shardOf(env, addressed!.movingFrom!);
  if (fresh(HOME_SHARD)) yield homeShard(env);
}

/** Whether an error or an ack outcome says "no such task here". */
export function isTaskMissing(result: unknown): boolean {
  if (result instanceof EdgeqError) return result.code === "not_found";
  if (typeof result === "object" && result !== null && "ok" in result) {
    const outcome = result as AckOutcome;
    return !outcome.ok && outcome.error.code === "not_found";
  }
  return false;
}

/**
 * Every shard, in the order a task moves between them, for the lookup after a miss: read fresh (no
 * cache), a moving partition's source before its destination, then the recorded address's, the home
 * database, and every other shard last — a task whose id names no partition and whose address was never
 * recorded (a chained child of a client's id, created beside its parent) is found wherever it is.
 */
async function shardsInMoveOrder(env: Env, id: string): Promise<Shard[]> {
  const home = homeShard(env).db;
  const slot = decodeSlot(id);
  const address = await home.get<{ slot: number }>(sql`SELECT slot FROM task_addresses WHERE id = ${id}`);
  const placements = await Promise.all(
    [slot, address?.slot ?? null].map((s) => (s === null ? null : readPlacementBySlot(home, s))),
  );
  const order = [...placements.flatMap((p) => (p ? [p.movingFrom, p.shard] : [])), HOME_SHARD, ...shardNames(env)];
  return [...new Set(order.filter((name): name is string => name !== null))].map((name) => shardOf(env, name));
}

/** `run` on one shard: its answer, or `missing` when it says "no such task here". */
async function tryShard<T>(
  shard: Shard,
  run: (shard: Shard) => Promise<T>,
): Promise<{ found: T } | { missing: unknown }> {
  try {
    const result = await run(shard);
    return isTaskMissing(result) ? { missing: result } : { found: result };
  } catch (error) {
    if (!isTaskMissing(error)) throw error;
    return { missing: error };
  }
}

/**
 * Runs a single-task call on the shard that holds the task: `run` on each candidate until one does not
 * answer "not found" (a call that finds no row changes nothing, so trying the next is safe).
 *
 * When every candidate misses on a deployment with several shards, the task may be moving, or this
 * isolate's placements may be up to ROUTE_CACHE_MS old: a second pass reads the placements fresh and tries
 * every shard in the order a task moves (source, its transit table, destination), so that a task moving
 * meanwhile is met on one of the three — it is always in exactly one: the take-out and the delivery each
 * commit in one batch. In transit: `task_moving` (503, retry). Only a task that is nowhere answers 404; that
 * miss costs two reads per shard, a found task what it cost before.
 *
 * @example
 * const task = await onTaskShard(env, id, (shard) => shard.store.getTask(id));
 */
export async function onTaskShard<T>(env: Env, id: string, run: (shard: Shard) => Promise<T>): Promise<T> {
  let miss: unknown = new NotFoundError(`task ${id}`);
  for await (const shard of taskShards(env, id)) {
    const tried = await tryShard(shard, run);
    if ("found" in tried) return tried.found;
    miss = tried.missing;
  }
  if (shardNames(env).length > 1) {
    for (const shard of await shardsInMoveOrder(env, id)) {
      const tried = await tryShard(shard, run);
      if ("found" in tried) return tried.found;
      if (await shard.store.isInTransit(id)) {
        throw new EdgeqError("task_moving", `task ${id} is moving between shards; retry in a second`);
      }
    }
  }
  if (miss instanceof Error) throw miss;
  return miss as T;
}
