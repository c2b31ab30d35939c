import { sql } from "drizzle-orm";
import { batchAll } from "../db/client";
import { idInOtherQueue } from "../contracts/task-field";
import type { NewTask } from "../engine/store";
import type { Env } from "../env";
import type { PartRoute, QueueRoute } from "./queue-route";
import { homeShard, shardOf } from "./shard-set";
import { decodeSlot } from "./task-slot";

/** How long an address whose task is nowhere is taken for an enqueue still under way, not one left behind.
 * An enqueue records its addresses before it inserts its tasks; its longest run (10,000 tasks in chunks,
 * giving way between them) is seconds. Why a minute: far past that, and an address left by a task since
 * deleted, or by a call refused after recording it, holds its id for at most a minute more. */
export const ADDRESS_IN_FLIGHT_MS = 60_000;

/** A placement as the lookup below reads it (null columns: no such placement). */
interface Owner {
  queue: string | null;
  shard: string | null;
  moving_from: string | null;
}

/** One client id's address and the partitions its address and its own characters name. */
interface Found {
  i: number;
  /** The slot its address names, after this call's insert (its own when the id was new). */
  slot: number;
  address_at: number;
  address_queue: string | null;
  address_shard: string | null;
  address_from: string | null;
  /** The partition whose slot the id's characters carry (an id edgeq made for another queue), if any. */
  carried_queue: string | null;
  carried_shard: string | null;
  carried_from: string | null;
}

/** An id that may belong to another queue: where to look for its task. */
interface Suspect {
  i: number;
  id: string;
  owner: Owner;
  /** Set when the suspicion comes from the id's address: its slot and when it was written. */
  address?: { slot: number; at: number };
}

/**
 * Places a call's client-supplied ids on a deployment of several shards, before anything is inserted.
 * Such an id carries no partition's slot, so its address is recorded (task_addresses, on the home
 * database): an id already recorded for a partition of this queue sends its task there, where the engine
 * finds it and answers `deduplicated`. An id that belongs to another queue — its address, or the slot its
 * characters carry (an id edgeq made), names another queue's partition whose database holds the task, or
 * its address was written moments ago by an enqueue still under way — refuses the call with
 * `id_in_other_queue` before any insert, on whatever shards the call's tasks were going to. An address
 * whose task is gone (pruned, purged) is taken over. The addresses this call wrote are removed again when
 * it is refused. One D1 batch on the home database when no id is suspect; `parts` is updated in place.
 *
 * @example
 * await placeClientIds(env, route, input, ids, parts, now);
 */
export async function placeClientIds(
  env: Env,
  route: QueueRoute,
  input: NewTask[],
  /** Each task's id where it was made before the insert: every client's own. */
  ids: ReadonlyArray<string | undefined>,
  parts: PartRoute[],
  now: number,
): Promise<void> {
  const ours = new Map(route.parts.map((p) => [p.slot, p]));
  const foreign: Array<{ i: number; id: string; slot: number; carried: number | null }> = [];
  ids.forEach((id, i) => {
    if (id === undefined || input[i]!.id === undefined) return;
    const carried = decodeSlot(id);
    // An id carrying a partition's slot of this queue is that partition's (its task, if any, is there).
    const own = carried === null ? undefined : ours.get(carried);
    if (own) parts[i] = own;
    else foreign.push({ i, id, slot: parts[i]!.slot, carried });
  });
  if (foreign.length === 0) return;
  const home = homeShard(env).db;
  const json = JSON.stringify(foreign);
  const [written = [], found = []] = await batchAll(home, [
    sql`INSERT INTO task_addresses (id, slot, created_at)
      SELECT j.value->>'id', j.value->>'slot', ${now} FROM json_each(${json}) AS j WHERE true
      ON CONFLICT (id) DO NOTHING RETURNING id`,
    sql`SELECT j.value->>'i' AS i, a.slot, a.created_at AS address_at,
        ap.queue AS address_queue, ap.shard AS address_shard, ap.moving_from AS address_from,
        cp.queue AS carried_queue, cp.shard AS carried_shard, cp.moving_from AS carried_from
      FROM json_each(${json}) AS j JOIN task_addresses a ON a.id = j.value->>'id'
        LEFT JOIN placements ap ON ap.slot = a.slot
        LEFT JOIN placements cp ON cp.slot = j.value->>'carried'`,
  ]);
  const suspects: Suspect[] = [];
  for (const row of found as unknown as Found[]) {
    const i = Number(row.i);
    const id = ids[i]!;
    const part = ours.get(row.slot);
    if (part) parts[i] = part;
    else suspects.push({ i, id, owner: ownerOf(row, "address"), address: { slot: row.slot, at: row.address_at } });
    if (row.carried_queue !== null && row.carried_queue !== route.queue) {
      suspects.push({ i, id, owner: ownerOf(row, "carried") });
    }
  }
  if (suspects.length === 0) return;
  try {
    await refuseSuspects(env, suspects, parts, now);
  } catch (error) {
    const mine = JSON.stringify((written as Array<{ id: string }>).map((r) => r.id));
    await home.run(sql`DELETE FROM task_addresses WHERE id IN (SELECT value FROM json_each(${mine}))`);
    throw error;
  }
}

function ownerOf(row: Found, which: "address" | "carried"): Owner {
  return which === "address"
    ? { queue: row.address_queue, shard: row.address_shard, moving_from: row.address_from }
    : { queue: row.carried_queue, shard: row.carried_shard, moving_from: row.carried_from };
}

/**
 * Throws `id_in_other_queue` for the first suspect whose task exists (on its partition's database, or the
 * one it is moving from) or whose address is in flight; takes over the addresses of the others that point
 * at a task gone, to this call's partition.
 */
async function refuseSuspects(env: Env, suspects: Suspect[], parts: PartRoute[], now: number): Promise<void> {
  const byShard = new Map<string, string[]>();
  for (const { id, owner } of suspects) {
    for (const shard of [owner.shard, owner.moving_from]) {
      if (shard !== null) byShard.set(shard, [...(byShard.get(shard) ?? []), id]);
    }
  }
  const held = new Set(
    (
      await Promise.all([...byShard].map(([shard, shardIds]) => shardOf(env, shard).store.findTaskIdsHeld(shardIds)))
    ).flat(),
  );
  const ordered = [...suspects].sort((a, b) => a.i - b.i);
  const taken = ordered.find((s) => held.has(s.id) || (s.address && now - s.address.at < ADDRESS_IN_FLIGHT_MS));
  if (taken) throw idInOtherQueue(taken.i, taken.id, taken.owner.queue);
  const stale = ordered.flatMap((s) =>
    s.address ? [{ i: s.i, id: s.id, from: s.address.slot, to: parts[s.i]!.slot }] : [],
  );
  if (stale.length === 0) return;
  // Guarded by the slot read: two calls taking over one address, only one does.
  const moved = await homeShard(env).db.all<{ id: string }>(sql`UPDATE task_addresses
    SET slot = j.value->>'to', created_at = ${now}
    FROM json_each(${JSON.stringify(stale)}) AS j
    WHERE task_addresses.id = j.value->>'id' AND task_addresses.slot = j.value->>'from'
    RETURNING task_addresses.id AS id`);
  const lost = stale.find((s) => !moved.some((m) => m.id === s.id));
  if (lost) throw idInOtherQueue(lost.i, lost.id, null);
}
