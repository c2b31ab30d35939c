import { sql } from "drizzle-orm";
import type { TransitRow, TransitSelection } from "../engine/store";
import { giveWay } from "../db/give-way";
import type { Env } from "../env";
import { allPlacements, existingPlacements, forgetPlacements, readPlacements, type Placement } from "./directory";
import { homeShard, shardNames, shardOf, type Shard } from "./shard-set";
import { carriesSlot, slotIdGlob } from "./task-slot";

/** Tasks moved per step: one D1 batch on the source and one on the destination. D1 runs one statement at a
 * time, so a step's statements are what another queue's request may wait behind during a move. Why 100:
 * 200 rows of small tasks were 5-23 ms to take out and 17-54 ms to deliver here (wrangler dev, 2 shared
 * cores), too near the 100 ms another request may wait; 100 halves that and still moves ~1,000 tasks a
 * second. A row carries up to 1 MiB of payload and result, so one bound JSON parameter stays well under D1's
 * statement size only while chunks stay small. */
export const RELAY_CHUNK = 100;

/** The pause after each step of a move (take-out, then delivery, then this pause; none in between, where
 * the tasks are in transit). Why 40 ms: measured with `npm run bench -- --only moves` (docs/scale.md,
 * "Measured"), statements awaited back to back held other requests for the whole copy; a pause about as
 * long as a step's statements lets the requests that arrived meanwhile run theirs first. A 20,000-task
 * copy then took 17 s at load ~7 (the request's 20 s budget; the minute tick continues a longer one). */
export const RELAY_PAUSE_MS = 40;

/** How long after its last task was relayed a move keeps consulting the old shard. Why 60 s: far above
 * ROUTE_CACHE_MS (5 s), so no Worker still routes by the old placement, and above the longest long poll
 * (20 s) a request resolved before the move may still be serving. */
export const MOVE_SETTLE_MS = 60_000;

/** Test hook: fail a step between taking tasks out of the source and delivering them (a crash). */
export interface RelayFaults {
  crashAfterTakeOut?: boolean;
}

/** What one delivery did: how many tasks it moved (those whose transit row this call cleared), the queues
 * they joined, and how many joined each destination slot (a move counts only its own partition's). */
interface Delivery {
  delivered: number;
  queues: string[];
  bySlot: Map<number, number>;
}

/**
 * Delivers what is in `source`'s transit table: inserts each task on its destination (by id, so a repeat
 * after a crash inserts nothing twice) with the partition it joins in its `slot` column when its id does not
 * carry that slot, records such an id's address, then removes it from transit. A task whose dedupe key a
 * live task on the destination already holds keeps running without the key (both were accepted; dropping
 * one would lose it). Two deliveries at once (the tick's and a request's) insert the same rows harmlessly;
 * each task is counted by the one whose clear removed it.
 */
async function deliverTransit(env: Env, source: Shard, now: number): Promise<Delivery> {
  const rows = await source.store.listTransit(RELAY_CHUNK);
  if (rows.length === 0) return { delivered: 0, queues: [], bySlot: new Map() };
  const byDest = new Map<string, TransitRow[]>();
  for (const row of rows) byDest.set(row.dest, [...(byDest.get(row.dest) ?? []), row]);
  for (const [dest, group] of byDest) {
    await shardOf(env, dest).store.putInFromTransit(
      group.map((r) => ({ ...r, rowSlot: carriesSlot(r.id, r.slot) ? null : r.slot })),
    );
    const unslotted = group.filter((r) => !carriesSlot(r.id, r.slot));
    if (unslotted.length > 0 && shardNames(env).length > 1) {
      await homeShard(env).db.run(sql`INSERT INTO task_addresses (id, slot, created_at)
        SELECT j.value->>'id', j.value->>'slot', ${now} FROM json_each(${JSON.stringify(unslotted.map((r) => ({ id: r.id, slot: r.slot })))}) AS j
        WHERE true ON CONFLICT (id) DO UPDATE SET slot = excluded.slot`);
    }
  }
  const cleared = new Set(await source.store.clearTransit(rows.map((r) => r.id)));
  const mine = rows.filter((r) => cleared.has(r.id));
  const bySlot = new Map<number, number>();
  for (const r of mine) bySlot.set(r.slot, (bySlot.get(r.slot) ?? 0) + 1);
  return { delivered: mine.length, queues: [...new Set(mine.map((r) => r.queue))], bySlot };
}

/**
 * Which of the queue's tasks on a moving partition's source belong to it: all of them, unless another
 * partition of the queue is on that shard too (or leaving it) — then only this partition's: the tasks whose
 * id carries its slot, and those whose `slot` column names it (a client's own id, a relayed task, a child
 * of either). What a move takes, and what the placement view counts as left on the source.
 * `queueParts`: the queue's placements.
 */
export function moveSelection(placement: Placement, queueParts: Placement[]): TransitSelection {
  const source = placement.movingFrom;
  const shared = queueParts.some((p) => p.part !== placement.part && (p.shard === source || p.movingFrom === source));
  return shared
    ? { queue: placement.queue, partition: { slot: placement.slot, idGlob: slotIdGlob(placement.slot) } }
    : { queue: placement.queue };
}

/**
 * Advances one partition's move by up to `maxSteps` chunks: take out of the old shard, deliver to the new.
 * When nothing of it is left on the old shard it is `settling`; MOVE_SETTLE_MS later a last sweep finds
 * nothing (or relays what a stale route wrote, and settles again) and the move ends. Safe to run twice at
 * once or after a crash at any point: every step is guarded by the transit table.
 */
export async function advanceMove(
  env: Env,
  placement: Placement,
  now: number,
  opts: { maxSteps?: number; faults?: RelayFaults } = {},
): Promise<{ relayed: number; state: "copying" | "settling" | "done" }> {
  if (!placement.movingFrom) return { relayed: 0, state: "done" };
  const source = shardOf(env, placement.movingFrom);
  const selection = moveSelection(placement, await readPlacements(homeShard(env).db, placement.queue));
  const to = { shard: placement.shard, slot: placement.slot };
  let relayed = 0;
  let emptied = false;
  for (let step = 0; step < (opts.maxSteps ?? 50); step++) {
    // Live tasks first, through the live index (a few rows read per task); then the finished ones, which
    // only a walk of the table finds (no index holds finished tasks by queue).
    let taken = await source.store.takeOutForTransit({ ...selection, liveOnly: true }, to, RELAY_CHUNK, now);
    if (taken === 0) taken = await source.store.takeOutForTransit(selection, to, RELAY_CHUNK, now);
    if (opts.faults?.crashAfterTakeOut && taken > 0) throw new Error("relay: injected crash after take-out");
    // No pause between take-out and delivery: a task in transit answers `task_moving` until it lands.
    // Counted: what this partition received (a delivery also carries whatever else was in transit there).
    const delivery = await deliverTransit(env, source, now);
    const delivered = delivery.delivered;
    relayed += delivery.bySlot.get(placement.slot) ?? 0;
    if (taken === 0 && delivered === 0) {
      emptied = true;
      break;
    }
    await giveWay(RELAY_PAUSE_MS);
  }
  const home = homeShard(env).db;
  await home.run(sql`UPDATE placements SET move_relayed = move_relayed + ${relayed}, updated_at = ${now}
    WHERE queue = ${placement.queue} AND part = ${placement.part}`);
  if (!emptied) return { relayed, state: "copying" };
  if (placement.moveState === "copying" || relayed > 0) {
    await home.run(sql`UPDATE placements SET move_state = 'settling', move_copied_at = ${now}
      WHERE queue = ${placement.queue} AND part = ${placement.part} AND moving_from IS NOT NULL`);
    forgetPlacements(placement.queue);
    return { relayed, state: "settling" };
  }
  if (placement.moveCopiedAt !== null && now - placement.moveCopiedAt < MOVE_SETTLE_MS)
    return { relayed, state: "settling" };
  await home.run(sql`UPDATE placements SET moving_from = NULL, move_state = NULL, updated_at = ${now}
    WHERE queue = ${placement.queue} AND part = ${placement.part}`);
  forgetPlacements(placement.queue);
  return { relayed, state: "done" };
}

/**
 * The relay sweep (cron tick, and after a move starts): advances every move, delivers whatever a crash
 * left in transit, and sends home live tasks found on a shard their queue is not placed on (a chained
 * child enqueued beside its parent; a stale route's write). Returns the queues that received tasks.
 */
export async function relayAll(env: Env, now: number): Promise<{ relayed: number; queues: string[] }> {
  const placements = await allPlacements(env);
  let relayed = 0;
  const queues = new Set<string>();
  for (const placement of placements.filter((p) => p.movingFrom !== null)) {
    const result = await advanceMove(env, placement, now);
    relayed += result.relayed;
    if (result.relayed > 0) queues.add(placement.queue);
  }
  if (shardNames(env).length === 1) return { relayed, queues: [...queues] };
  const placed = new Map<string, Placement[]>();
  for (const p of placements) placed.set(p.queue, [...(placed.get(p.queue) ?? []), p]);
  for (const name of shardNames(env)) {
    const shard = shardOf(env, name);
    for (;;) {
      const { delivered, queues: got } = await deliverTransit(env, shard, now);
      relayed += delivered;
      got.forEach((q) => queues.add(q));
      if (delivered === 0) break;
    }
    // Which queues placed elsewhere have live tasks here: one probe of the live index per queue, never a
    // scan of every live task (a DISTINCT over them read each one, every minute).
    const elsewhere = [...placed.entries()].filter(([, parts]) => !holds(parts, name)).map(([queue]) => queue);
    if (elsewhere.length === 0) continue;
    for (const queue of await shard.store.findQueuesWithLiveTasks(elsewhere)) {
      const delivered = await sendHome(env, shard, placed.get(queue)!, now);
      relayed += delivered;
      if (delivered > 0) queues.add(queue);
    }
  }
  return { relayed, queues: [...queues] };
}

/**
 * Sends home the live tasks of `queue` found on shards it is not placed on: a chained child is created
 * beside its parent (one D1 batch with the parent's completion), and its queue may live elsewhere.
 * Called after such a completion, before the child's queue is woken; the cron's relayAll is the backstop.
 */
export async function relayQueueHome(env: Env, queue: string, now: number): Promise<number> {
  if (shardNames(env).length === 1) return 0;
  const parts = await existingPlacements(env, queue);
  let relayed = 0;
  for (const name of shardNames(env).filter((n) => !holds(parts, n))) {
    relayed += await sendHome(env, shardOf(env, name), parts, now);
  }
  return relayed;
}

/** Whether a queue whose placements are `parts` keeps tasks on shard `name` (a partition, or a move's source). */
function holds(parts: Placement[], name: string): boolean {
  return parts.some((p) => p.shard === name || p.movingFrom === name);
}

/** Relays every live task of a queue found on `shard`, which does not hold it, to its first partition. */
async function sendHome(env: Env, shard: Shard, parts: Placement[], now: number): Promise<number> {
  const home = parts[0];
  if (!home) return 0;
  let relayed = 0;
  for (;;) {
    const taken = await shard.store.takeOutForTransit(
      { queue: home.queue, liveOnly: true },
      { shard: home.shard, slot: home.slot },
      RELAY_CHUNK,
      now,
    );
    const { delivered } = await deliverTransit(env, shard, now);
    relayed += delivered;
    if (taken === 0 && delivered === 0) return relayed;
    // A chained child or two (the usual case) are done in one step: no pause before the child's wake-up.
    if (taken === RELAY_CHUNK) await giveWay(RELAY_PAUSE_MS);
  }
}
