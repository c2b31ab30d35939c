import { getTableColumns, sql, type SQL } from "drizzle-orm";
import { batchAll, type Db } from "../db/client";
import { tasks } from "../db/schema";
import type { Env } from "../env";
import { allPlacements, existingPlacements, forgetPlacements, type Placement } from "./directory";
import { homeShard, shardNames, shardOf, type Shard } from "./shard-set";
import { carriesSlot, encodeSlot } from "./task-slot";

/** Tasks moved per step: one D1 batch on the source and one insert on the destination. Why 200: a row
 * carries up to 1 MiB of payload and result, and one bound JSON parameter must stay well under D1's
 * statement size; 200 rows of typical size keep a step under a second. */
export const RELAY_CHUNK = 200;

/** How long after its last task was relayed a move keeps consulting the old shard. Why 60 s: far above
 * ROUTE_CACHE_MS (5 s), so no Worker still routes by the old placement, and above the longest long poll
 * (20 s) a request resolved before the move may still be serving. */
export const MOVE_SETTLE_MS = 60_000;

const COLUMNS = Object.values(getTableColumns(tasks)).map((c) => c.name);
const ROW_JSON = sql.raw(`json_object(${COLUMNS.map((c) => `'${c}', tasks.${c}`).join(", ")})`);
const COLUMN_LIST = sql.raw(COLUMNS.join(", "));

/** The columns of a transit row's task, for the insert on the destination. A dedupe key a live task there
 * already holds is dropped (see deliverTransit). */
const FROM_TRANSIT = sql.join(
  COLUMNS.map((c) =>
    c === "dedupe_key"
      ? sql`CASE WHEN EXISTS (SELECT 1 FROM tasks live WHERE live.queue = json_extract(t.value, '$.row.queue')
          AND live.dedupe_key = json_extract(t.value, '$.row.dedupe_key') AND live.finished_at IS NULL)
        THEN NULL ELSE json_extract(t.value, '$.row.dedupe_key') END`
      : sql.raw(`json_extract(t.value, '$.row.${c}')`),
  ),
  sql`, `,
);

/** Test hook: fail a step between taking tasks out of the source and delivering them (a crash). */
export interface RelayFaults {
  crashAfterTakeOut?: boolean;
}

/**
 * Takes up to RELAY_CHUNK of the selected tasks out of `source` into its transit table, in one D1 batch:
 * after it, each task is in transit, not live, on the source — so it is never live on two databases.
 */
async function takeOut(source: Db, where: SQL, dest: string, slot: number, now: number): Promise<number> {
  const [moved = []] = await batchAll(source, [
    sql`INSERT INTO task_transit (id, queue, dest, slot, row, created_at)
      SELECT tasks.id, tasks.queue, ${dest}, ${slot}, ${ROW_JSON}, ${now} FROM tasks WHERE ${where}
      LIMIT ${RELAY_CHUNK}
      ON CONFLICT (id) DO NOTHING
      RETURNING id`,
    sql`DELETE FROM tasks WHERE id IN (SELECT id FROM task_transit)`,
  ]);
  return moved.length;
}

/**
 * Delivers what is in `source`'s transit table: inserts each task on its destination (by id, so a repeat
 * after a crash inserts nothing twice), records the address of an id that does not carry its new slot,
 * then removes it from transit. A task whose dedupe key a live task on the destination already holds
 * keeps running without the key (both were accepted; dropping one would lose it).
 */
async function deliverTransit(env: Env, source: Shard, now: number): Promise<{ delivered: number; queues: string[] }> {
  const rows = await source.db.all<{ id: string; queue: string; dest: string; slot: number; row: string }>(
    sql`SELECT id, queue, dest, slot, row FROM task_transit ORDER BY id LIMIT ${RELAY_CHUNK}`,
  );
  if (rows.length === 0) return { delivered: 0, queues: [] };
  const byDest = new Map<string, typeof rows>();
  for (const row of rows) byDest.set(row.dest, [...(byDest.get(row.dest) ?? []), row]);
  for (const [dest, group] of byDest) {
    const target = shardOf(env, dest).db;
    const json = JSON.stringify(group.map((r) => ({ id: r.id, row: JSON.parse(r.row) as unknown })));
    await target.run(sql`INSERT INTO tasks (${COLUMN_LIST})
      SELECT ${FROM_TRANSIT} FROM json_each(${json}) AS t WHERE true
      ON CONFLICT DO NOTHING`);
    // Two tasks of this very chunk holding one dedupe key (children of two parents): the second was not
    // inserted. It goes in without its key rather than be lost.
    const landed = await target.all<{ id: string }>(
      sql`SELECT id FROM tasks WHERE id IN (SELECT value FROM json_each(${JSON.stringify(group.map((r) => r.id))}))`,
    );
    const missing = group.filter((r) => !landed.some((l) => l.id === r.id));
    if (missing.length > 0) {
      const again = JSON.stringify(
        missing.map((r) => ({ id: r.id, row: { ...(JSON.parse(r.row) as object), dedupe_key: null } })),
      );
      await target.run(sql`INSERT INTO tasks (${COLUMN_LIST})
        SELECT ${FROM_TRANSIT} FROM json_each(${again}) AS t WHERE true
        ON CONFLICT (id) DO NOTHING`);
    }
    const unslotted = group.filter((r) => !carriesSlot(r.id, r.slot));
    if (unslotted.length > 0 && shardNames(env).length > 1) {
      await homeShard(env).db.run(sql`INSERT INTO task_addresses (id, slot, created_at)
        SELECT j.value->>'id', j.value->>'slot', ${now} FROM json_each(${JSON.stringify(unslotted.map((r) => ({ id: r.id, slot: r.slot })))}) AS j
        WHERE true ON CONFLICT (id) DO UPDATE SET slot = excluded.slot`);
    }
  }
  await source.db.run(
    sql`DELETE FROM task_transit WHERE id IN (SELECT value FROM json_each(${JSON.stringify(rows.map((r) => r.id))}))`,
  );
  return { delivered: rows.length, queues: [...new Set(rows.map((r) => r.queue))] };
}

/** Which of the queue's tasks on the source a move of this partition takes. */
function moveSelection(placement: Placement, sharesSource: boolean): SQL {
  // Another partition of the queue on the source shard stays: take only ids carrying this part's slot.
  return sharesSource
    ? sql`tasks.queue = ${placement.queue} AND substr(tasks.id, 11, 4) = ${encodeSlot(placement.slot)}`
    : sql`tasks.queue = ${placement.queue}`;
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
  const others = (await allPlacements(env)).filter(
    (p) =>
      p.queue === placement.queue &&
      p.part !== placement.part &&
      (p.shard === source.name || p.movingFrom === source.name),
  );
  const where = moveSelection(placement, others.length > 0);
  let relayed = 0;
  let emptied = false;
  for (let step = 0; step < (opts.maxSteps ?? 50); step++) {
    const taken = await takeOut(source.db, where, placement.shard, placement.slot, now);
    if (opts.faults?.crashAfterTakeOut && taken > 0) throw new Error("relay: injected crash after take-out");
    const { delivered } = await deliverTransit(env, source, now);
    relayed += delivered;
    if (taken === 0 && delivered === 0) {
      emptied = true;
      break;
    }
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
    const strays = await shard.db.all<{ queue: string }>(
      sql`SELECT j.value AS queue FROM json_each(${JSON.stringify(
        elsewhere,
      )}) AS j WHERE EXISTS (SELECT 1 FROM tasks t WHERE t.queue = j.value AND t.finished_at IS NULL)`,
    );
    for (const { queue } of strays) {
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
    const where = sql`tasks.queue = ${home.queue} AND tasks.finished_at IS NULL`;
    const taken = await takeOut(shard.db, where, home.shard, home.slot, now);
    const { delivered } = await deliverTransit(env, shard, now);
    relayed += delivered;
    if (taken === 0 && delivered === 0) return relayed;
  }
}
