import type { Env } from "../env";
import type { StateCounts } from "../engine/store";
import { readShard, shardNames } from "./shard-set";

/**
 * Every queue over every shard with its counts per state: the shards are read in parallel (through D1's
 * Sessions API where offered) and a queue present on several (partitions, a move) is summed.
 */
export async function listAllQueues(env: Env): Promise<Array<{ queue: string; counts: StateCounts }>> {
  const perShard = await Promise.all(shardNames(env).map((name) => readShard(env, name).store.listQueues()));
  const merged = new Map<string, StateCounts>();
  for (const { queue, counts } of perShard.flat()) {
    const total = merged.get(queue);
    if (!total) merged.set(queue, { ...counts });
    else for (const state of Object.keys(counts) as Array<keyof StateCounts>) total[state] += counts[state];
  }
  return [...merged.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([queue, counts]) => ({ queue, counts }));
}

/**
 * Merges per-shard rows of the same key (queue, or queue and type): numbers add up, except `min` fields,
 * which keep the smallest non-null value (an oldest time).
 */
export function mergeShardRows<T extends object>(perShard: T[][], keys: Array<keyof T>, min: Array<keyof T> = []): T[] {
  const merged = new Map<string, T>();
  for (const row of perShard.flat()) {
    const key = keys.map((k) => String(row[k])).join("\u0000");
    const total = merged.get(key);
    if (!total) {
      merged.set(key, { ...row });
      continue;
    }
    for (const field of Object.keys(row) as Array<keyof T>) {
      if (keys.includes(field)) continue;
      const a = total[field] as number | null;
      const b = row[field] as number | null;
      if (min.includes(field)) (total[field] as number | null) = a === null ? b : b === null ? a : Math.min(a, b);
      else if (typeof b === "number") (total[field] as number) = (a ?? 0) + b;
    }
  }
  return [...merged.values()].sort((x, y) => {
    const kx = keys.map((k) => String(x[k])).join("\u0000");
    const ky = keys.map((k) => String(y[k])).join("\u0000");
    return kx < ky ? -1 : kx > ky ? 1 : 0;
  });
}

/** The task stores of every shard, read through the Sessions API where offered (views only). */
export function readStores(env: Env) {
  return shardNames(env).map((name) => readShard(env, name).store);
}
