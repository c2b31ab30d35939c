import { sql, type SQL } from "drizzle-orm";
import type { Db } from "../../db/client";
import { EdgeqError } from "../../contracts/errors";
import { landEdgesSql } from "../edge-transit";
import { getQueueConfig, type QueueConfig } from "../queue-config";
import type { DeliveredRow } from "../transit";
import { locateTasks } from "./locate";
import { slotChars } from "./pack-ids";
import { commitGuarded, packWriteSql, readPacks, withRetries, type ReadSet } from "./pack-commit";
import type { Pack } from "./pack-row";
import { holdsTask, isLive } from "./slot-rules";
import { readPackTransitRow, type PackTransitRow } from "./transit-row";

/**
 * The put-in of a move over packs (the port's `putInFromTransit`): each delivered task goes back into a pack
 * with its source pack's id, at its own slot — so its id, which names that pack and slot, still finds it,
 * and no `pack_ids` row is written for it (a client's own id gets its `pack_ids` row again, as at enqueue).
 * The first task of a pack to arrive makes the pack's copy here (its other slots `o`: no task); the next ones
 * join it. Tasks taken out of one pack together arrive together, so a pack moved whole is one pack here: one
 * row and its live-index entry, whatever its number of tasks.
 *
 * All or none, in ONE batch guarded by the `ver` of each pack read, the key rows read and the absence of each
 * pack made (pack-commit.ts), computed again when another write came between. A task already here (a repeat
 * after a crash: its slot holds a task, or its client id is here) is left as it is. A task whose dedupe key a
 * live task here holds — or an earlier row of this delivery took — goes in without its key. The edges a task
 * carried (its dependents: src/engine/edge-transit.ts) go in with it.
 */
export function putInPackTasks(db: Db, delivered: DeliveredRow[]): Promise<void> {
  if (delivered.length === 0) return Promise.resolve();
  const rows = delivered.map((d) => ({ row: packRowOf(d), rowSlot: d.rowSlot }));
  return withRetries(async () => {
    const ids = rows.map(({ row }) => taskIdOf(row));
    const here = await locateTasks(db, ids);
    const packs = await readPacks(
      db,
      rows.map(({ row }) => row.pack.id),
    );
    const read: ReadSet = { packs: [...packs.values()], keysHeld: [], keysFree: [], conditions: [] };
    const keyOwner = await keysHere(db, rows, read);
    const changed = new Map<string, Pack>();
    const clientIds: Array<[string, string, string, number]> = [];
    const keyWrites: Array<[string, string, string]> = [];
    const edges: Array<{ id: string; edges: unknown }> = [];
    let now = 0;
    rows.forEach(({ row, rowSlot }, i) => {
      const pack = packs.get(row.pack.id) ?? newCopy(row, packs, read);
      while (pack.slots.length <= row.k) pack.slots.push({ st: "o", a: 0, lease: null, body: { b: null } });
      if (here.has(ids[i]!) || holdsTask(pack.slots[row.k]!)) return;
      const body = { ...row.body };
      delete body.sl;
      if (rowSlot !== null) body.sl = rowSlot;
      if (body.d !== undefined) {
        const owner = `${row.pack.queue}\u0000${body.d}`;
        if (keyOwner.has(owner)) delete body.d;
        else {
          keyOwner.add(owner);
          keyWrites.push([row.pack.queue, body.d, ids[i]!]);
        }
      }
      if (body.i !== undefined) clientIds.push([body.i, row.pack.queue, row.pack.id, row.k]);
      pack.slots[row.k] = { st: row.st, a: row.a, lease: row.lease, body };
      const carried = delivered[i]!.edges;
      if (carried) edges.push({ id: ids[i]!, edges: JSON.parse(carried) as unknown });
      changed.set(pack.id, pack);
      now = Math.max(now, row.t);
    });
    if (changed.size === 0) return true;
    const configs = new Map<string, QueueConfig>();
    for (const queue of new Set([...changed.values()].map((p) => p.queue)))
      configs.set(queue, await getQueueConfig(db, queue));
    const statements: SQL[] = [];
    for (const pack of changed.values()) {
      if (pack.ver === null && !pack.slots.some(isLive)) pack.finishedAt = finishedOf(pack, now);
      statements.push(...packWriteSql(pack, configs.get(pack.queue)!, now));
    }
    if (keyWrites.length) {
      statements.push(sql`INSERT INTO pack_keys (queue, dedupe_key, task_id)
        SELECT j.value->>0, j.value->>1, j.value->>2 FROM json_each(${JSON.stringify(keyWrites)}) AS j WHERE true
        ON CONFLICT (queue, dedupe_key) DO UPDATE SET task_id = excluded.task_id`);
    }
    if (clientIds.length) {
      // No ON CONFLICT: an id another write took meanwhile fails the batch, and the next round finds it here.
      statements.push(sql`INSERT INTO pack_ids (id, queue, pack, slot)
        SELECT j.value->>0, j.value->>1, j.value->>2, j.value->>3 FROM json_each(${JSON.stringify(clientIds)}) AS j`);
    }
    // The edges it carried go in with it (src/engine/edge-transit.ts), in the same batch: a pack task put in is
    // never without the dependents it owes a settlement.
    if (edges.length) statements.push(...landEdgesSql(JSON.stringify(edges)));
    return (await commitGuarded(db, read, statements)) === null ? null : true;
  }).then(() => undefined);
}

/** A delivered row as a pack task; a `tasks` row (the row store's) is not one this store can put in. */
function packRowOf(delivered: DeliveredRow): PackTransitRow {
  const row = readPackTransitRow(delivered.row);
  if (row === null)
    throw new EdgeqError("internal", `pack store: task ${delivered.id} in transit is a row store's task, not a pack's`);
  return row;
}

/** The id the task answers to: its client's own, else its slot's address. */
function taskIdOf(row: PackTransitRow): string {
  return row.body.i ?? row.pack.id + slotChars(row.k);
}

/**
 * The dedupe keys of these rows a live task here holds, as `queue\0key`; every key row read (or read absent)
 * joins the guard, and the pack of each holder read joins it too.
 */
async function keysHere(db: Db, rows: Array<{ row: PackTransitRow }>, read: ReadSet): Promise<Set<string>> {
  const wanted = [
    ...new Map(
      rows.flatMap(({ row }) =>
        row.body.d === undefined ? [] : [[`${row.pack.queue}\u0000${row.body.d}`, [row.pack.queue, row.body.d]]],
      ),
    ).values(),
  ] as Array<[string, string]>;
  const held = new Set<string>();
  if (wanted.length === 0) return held;
  const keyRows = await db.all<{ queue: string; dedupe_key: string; task_id: string }>(
    sql`SELECT k.queue, k.dedupe_key, k.task_id FROM json_each(${JSON.stringify(wanted)}) AS j
      JOIN pack_keys k ON k.queue = j.value->>0 AND k.dedupe_key = j.value->>1`,
  );
  const holders = await locateTasks(
    db,
    keyRows.map((r) => r.task_id),
  );
  for (const [queue, key] of wanted) {
    const row = keyRows.find((r) => r.queue === queue && r.dedupe_key === key);
    if (!row) {
      read.keysFree!.push([queue, key]);
      continue;
    }
    read.keysHeld!.push([queue, key, row.task_id]);
    const holder = holders.get(row.task_id);
    if (!holder) continue;
    read.packs.push(holder.pack);
    if (isLive(holder.slot)) held.add(`${queue}\u0000${key}`);
  }
  return held;
}

/** The copy here of a row's pack, made now (every slot `o` until its tasks are put in); its absence joins the
 * guard (two deliveries making it at once: the second computes again and joins the first's). */
function newCopy(row: PackTransitRow, packs: Map<string, Pack>, read: ReadSet): Pack {
  const { id, queue, type, priority, runAt, maxAttempts, createdAt, n } = row.pack;
  const pack: Pack = {
    id,
    queue,
    type,
    priority,
    runAt,
    maxAttempts,
    createdAt,
    finishedAt: null,
    ver: null,
    slots: Array.from({ length: n }, () => ({ st: "o" as const, a: 0, lease: null, body: { b: null } })),
    spilled: new Map(),
  };
  packs.set(id, pack);
  read.conditions!.push(sql`NOT EXISTS (SELECT 1 FROM packs WHERE id = ${id})`);
  return pack;
}

/** When a copy made with finished tasks only finished: its last task's end (as on its source), else `now`. */
function finishedOf(pack: Pack, now: number): number {
  const ends = pack.slots.flatMap((s) => (holdsTask(s) && s.body.f !== undefined ? [s.body.f] : []));
  return ends.length ? Math.max(...ends) : now;
}
