import { sql } from "drizzle-orm";
import { batchAll } from "../db/client";
import type { Env } from "../env";
import { allShards, homeShard } from "./shard-set";

/** Addresses checked per cron tick. Why 500: one JSON-array read per shard and one delete, whatever the
 * backlog; addresses are written only for client-supplied ids, so a tick keeps up with any real rate. */
export const ADDRESSES_PER_TICK = 500;

/** How long an address goes unchecked. Why an hour: a task that still exists has its address re-checked
 * (one row rewritten) at most once an hour, and a gone task's address lingers at most about that long. */
export const ADDRESS_CHECK_MS = 3_600_000;

/**
 * Forgets the addresses of tasks that no longer exist (pruned by retention, purged, deleted with their
 * queue): the ADDRESSES_PER_TICK addresses checked longest ago (more than ADDRESS_CHECK_MS) are looked for
 * on every shard, tasks and transit; those found nowhere are deleted, the others marked checked now and go
 * to the back of the line. Never an address whose task is anywhere, so no task becomes unreachable.
 */
export async function pruneAddresses(env: Env, now: number): Promise<{ pruned: number; kept: number }> {
  const home = homeShard(env).db;
  const due = await home.all<{ id: string }>(sql`SELECT id FROM task_addresses
    WHERE created_at < ${now - ADDRESS_CHECK_MS} ORDER BY created_at LIMIT ${ADDRESSES_PER_TICK}`);
  if (due.length === 0) return { pruned: 0, kept: 0 };
  const ids = due.map((r) => r.id);
  const found = await Promise.all(allShards(env).map((s) => s.store.findTaskIdsHeld(ids)));
  const alive = [...new Set(found.flat())];
  const gone = due.map((r) => r.id).filter((id) => !alive.includes(id));
  await batchAll(home, [
    sql`DELETE FROM task_addresses WHERE id IN (SELECT value FROM json_each(${JSON.stringify(gone)}))`,
    sql`UPDATE task_addresses SET created_at = ${now} WHERE id IN (SELECT value FROM json_each(${JSON.stringify(alive)}))`,
  ]);
  return { pruned: gone.length, kept: alive.length };
}
