import { sql } from "drizzle-orm";
import type { Env } from "../env";
import { EdgeqError, NotFoundError } from "../contracts/errors";
import type { AckOutcome } from "../engine/ack";
import { isInTransit } from "../engine/transit";
import { placementBySlot } from "./directory";
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

/** Whether a task is in transit out of a shard right now (a move's copy step holds it for a moment). */
async function inTransit(env: Env, id: string): Promise<boolean> {
  for (const name of shardNames(env)) {
    if (await isInTransit(shardOf(env, name).db, id)) return true;
  }
  return false;
}

/**
 * Runs a single-task call on the shard that holds the task: `run` on each candidate until one does not
 * answer "not found" (a call that finds no row changes nothing, so trying the next is safe). When every
 * candidate misses and the task is in transit between shards, `task_moving` (503, retry) instead of a 404.
 *
 * @example
 * const task = await onTaskShard(env, id, (shard) => getTask(shard.db, id));
 */
export async function onTaskShard<T>(env: Env, id: string, run: (shard: Shard) => Promise<T>): Promise<T> {
  let miss: unknown = new NotFoundError(`task ${id}`);
  for await (const shard of taskShards(env, id)) {
    try {
      const result = await run(shard);
      if (!isTaskMissing(result)) return result;
      miss = result;
    } catch (error) {
      if (!isTaskMissing(error)) throw error;
      miss = error;
    }
  }
  if (shardNames(env).length > 1 && (await inTransit(env, id))) {
    throw new EdgeqError("task_moving", `task ${id} is moving between shards; retry in a second`);
  }
  if (miss instanceof Error) throw miss;
  return miss as T;
}
