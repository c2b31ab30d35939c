import { sql } from "drizzle-orm";
import type { Db } from "../db/client";
import type { Env } from "../env";
import { HOME_SHARD, homeShard, shardNames } from "./shard-set";

/** A partition's row in the directory (table `placements` on the home database). */
export interface Placement {
  queue: string;
  part: number;
  slot: number;
  shard: string;
  movingFrom: string | null;
  moveState: "copying" | "settling" | null;
  moveStartedAt: number | null;
  moveCopiedAt: number | null;
  moveRelayed: number;
}

/**
 * How long a Worker isolate trusts the placements it read. Why 5 s: a move keeps consulting the old shard
 * for MOVE_SETTLE_MS after its last task was relayed, far longer than any cached route can live, so a
 * request routed by a stale cache still finds its task (src/shards/move.ts).
 */
export const ROUTE_CACHE_MS = 5_000;

interface Cached {
  rows: Placement[];
  at: number;
}
const byQueue = new Map<string, Cached>();
const bySlot = new Map<number, { row: Placement | null; at: number }>();

/** Drops cached placements (after this isolate changed them; tests). */
export function forgetPlacements(queue?: string): void {
  if (queue === undefined) {
    byQueue.clear();
    bySlot.clear();
    return;
  }
  const cached = byQueue.get(queue);
  byQueue.delete(queue);
  for (const row of cached?.rows ?? []) bySlot.delete(row.slot);
}

const placementColumns = sql`queue, part, slot, shard, moving_from AS movingFrom, move_state AS moveState,
  move_started_at AS moveStartedAt, move_copied_at AS moveCopiedAt, move_relayed AS moveRelayed`;

/** The queue's placements as stored (no cache), by part. */
export async function readPlacements(home: Db, queue: string): Promise<Placement[]> {
  return home.all<Placement>(sql`SELECT ${placementColumns} FROM placements WHERE queue = ${queue} ORDER BY part`);
}

/** The placement holding a slot as stored (no cache), or null. */
export async function readPlacementBySlot(home: Db, slot: number): Promise<Placement | null> {
  return (await home.get<Placement>(sql`SELECT ${placementColumns} FROM placements WHERE slot = ${slot}`)) ?? null;
}

/** The placement holding a slot, cached. */
export async function placementBySlot(env: Env, slot: number): Promise<Placement | null> {
  const hit = bySlot.get(slot);
  if (hit && Date.now() - hit.at < ROUTE_CACHE_MS) return hit.row;
  const row = await readPlacementBySlot(homeShard(env).db, slot);
  bySlot.set(slot, { row, at: Date.now() });
  return row;
}

/** FNV-1a, 32 bits: a stable hash for placement and partition choice (not for security). */
export function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash >>> 0;
}

/**
 * The shards ranked for a queue by rendezvous hashing: each (queue, shard) pair scores, highest first. A
 * stable rule: adding a shard changes no existing placement (those are recorded), and a new queue lands on
 * the new shard with probability 1/N. Partition p takes the p-th shard of the ranking, so a queue's
 * partitions spread over distinct shards while there are enough.
 */
export function rankShards(queue: string, shards: string[]): string[] {
  return [...shards].sort((a, b) => fnv1a(`${queue}\u0000${b}`) - fnv1a(`${queue}\u0000${a}`) || (a < b ? -1 : 1));
}

/**
 * The queue's placements, creating partitions 0..parts-1 that do not exist yet (the directory only grows;
 * a move changes a row on purpose). Concurrent first uses agree: insert-or-ignore, then read back.
 * `parts` null: whatever exists, or one partition.
 */
export async function ensurePlacements(
  env: Env,
  queue: string,
  parts: number | null,
  now: number,
): Promise<Placement[]> {
  const cached = byQueue.get(queue);
  if (cached && Date.now() - cached.at < ROUTE_CACHE_MS && cached.rows.length >= (parts ?? 1)) return cached.rows;
  const home = homeShard(env).db;
  let rows = await readPlacements(home, queue);
  const wanted = Math.max(parts ?? 1, rows.length, 1);
  if (rows.length < wanted) {
    const shards = shardNames(env);
    const ranking = rankShards(queue, shards);
    // A queue whose tasks or config the home database already holds (from before sharding, or before a
    // second shard was bound) stays where its data is.
    const legacyHome = shards.length > 1 && rows.length === 0 ? await homeShard(env).store.hasQueueData(queue) : false;
    for (let part = rows.length; part < wanted; part++) {
      const shard = part === 0 && (legacyHome || shards.length === 1) ? HOME_SHARD : ranking[part % ranking.length]!;
      // The slot is the next free one; D1 runs one statement at a time, so max+1 cannot be taken twice.
      await home.run(sql`INSERT INTO placements (queue, part, slot, shard, created_at, updated_at)
        SELECT ${queue}, ${part}, coalesce(max(slot), 0) + 1, ${shard}, ${now}, ${now} FROM placements WHERE true
        ON CONFLICT (queue, part) DO NOTHING`);
    }
    rows = await readPlacements(home, queue);
  }
  byQueue.set(queue, { rows, at: Date.now() });
  for (const row of rows) bySlot.set(row.slot, { row, at: Date.now() });
  return rows;
}

/** The queue's placements if it has any, without creating one (reads of a queue never written). */
export async function existingPlacements(env: Env, queue: string): Promise<Placement[]> {
  const cached = byQueue.get(queue);
  if (cached && Date.now() - cached.at < ROUTE_CACHE_MS) return cached.rows;
  const rows = await readPlacements(homeShard(env).db, queue);
  if (rows.length > 0) {
    byQueue.set(queue, { rows, at: Date.now() });
    for (const row of rows) bySlot.set(row.slot, { row, at: Date.now() });
  }
  return rows;
}

/** Every placement (the directory), for cross-queue views and the cron's relay sweep. */
export async function allPlacements(env: Env): Promise<Placement[]> {
  return homeShard(env).db.all<Placement>(sql`SELECT ${placementColumns} FROM placements ORDER BY queue, part`);
}
