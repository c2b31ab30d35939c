import { sql, type SQL } from "drizzle-orm";
import { allRows, type Db } from "../../db/client";
import type { BatchRider } from "../batch-rider";
import { configColumnsSql, queueConfigOfColumns, type QueueConfig } from "../queue-config";
import { packOf } from "./pack-ids";
import { decodePack, PACK_COLUMNS, slotId, type Pack, type PackRowRead, type Slot } from "./pack-row";
import { holdsTask } from "./slot-rules";
import { loadSpill } from "./spill";

/** A task found in its pack. */
export interface Located {
  pack: Pack;
  k: number;
  slot: Slot;
}

/** What a write by id reads before it computes: its tasks in their packs, and their queues' configs. */
export interface PackReads {
  found: Map<string, Located>;
  /** The ids of the packs read (those that exist): whose ids are pack tasks (hybrid/layout-of-ids.ts). */
  packIds: Set<string>;
  configs: Map<string, QueueConfig>;
  /** Set when these reads are a memory of this isolate's (hybrid/leased-packs.ts), not a read of the database:
   * the conditions a write computed from them also holds under (the configs' fingerprints), and statements
   * that ride the write's batch after its own when it commits first time (the next lease of an ack that
   * carries one: hybrid-store.ts `ackThenLease`). */
  remembered?: { conditions: SQL[]; rider?: BatchRider };
}

/**
 * What round `round` of a holder's write computes from: `preread` in round 0, else a fresh read (undefined);
 * and whether it may splice — in the first round computed from the database (round 0, or round 1 after a
 * remembered read's guard failed); a later round writes its packs whole (slot-splice.ts).
 */
export function roundReads(round: number, preread?: PackReads): { reads?: PackReads; splices: boolean } {
  if (round === 0) return { reads: preread, splices: true };
  return { splices: round === 1 && preread?.remembered !== undefined };
}

/**
 * Finds tasks by id: a client's own id through `pack_ids`, any other through the pack and slot it names
 * (pack-ids.ts). A slot is the id's only when its task answers to that id (a client-id task is not found by its
 * slot's address), and holds a task (not `o`). Absent ids are missing from the map. One statement, and one
 * more only for a pack with spilled fields (spill.ts).
 */
export async function locateTasks(db: Db, ids: string[]): Promise<Map<string, Located>> {
  return (await readForWrites(db, ids, false)).found;
}

/**
 * `locateTasks` with the configs of the queues of the packs read, in the same statement: what a holder's write
 * reads before it computes (acks.ts, holder-writes.ts) — one round trip where it was three.
 */
export function locateForWrite(db: Db, ids: string[]): Promise<PackReads> {
  return readForWrites(db, ids, true);
}

/** The prefix of a config's columns beside a pack's (queue-config.ts `configColumnsSql`). */
const CONFIG = "cfg_";

async function readForWrites(db: Db, ids: string[], withConfigs: boolean): Promise<PackReads> {
  const found = new Map<string, Located>();
  if (ids.length === 0) return { found, packIds: new Set(), configs: new Map() };
  const named = [...new Set(ids.map((id) => packOf(id)?.pack).filter((p) => p !== undefined))];
  // The packs to read: those the ids name, and those of client ids (`pack_ids`). A CTE joined by primary key
  // (CROSS JOIN: the list first, whatever the planner's statistics say); the queue's config by its key.
  const packs = sql`WITH w(pid) AS MATERIALIZED (SELECT value FROM json_each(${JSON.stringify(named)})
      UNION SELECT pack FROM pack_ids WHERE id IN (SELECT value FROM json_each(${JSON.stringify(ids)})))
    SELECT ${sql.raw(PACK_COLUMNS)} FROM w CROSS JOIN packs ON packs.id = w.pid`;
  const rows = await allRows<PackRowRead & Record<string, unknown>>(
    db,
    withConfigs
      ? sql`SELECT p.*, ${configColumnsSql("q", CONFIG)} FROM (${packs}) AS p LEFT JOIN queues q ON q.name = p.queue`
      : packs,
  );
  const read = rows.map(decodePack);
  await loadSpill(db, read);
  const byId = new Map(read.map((p) => [p.id, p]));
  // A client's own id is its slot's `i` (pack_ids names the same slot); any other id is the address it names.
  // Only a slot holding a task: one moved out (`o`) may keep the id its task has now elsewhere.
  const address = new Map<string, { pack: string; slot: number }>();
  for (const pack of read) {
    pack.slots.forEach((slot, k) => {
      if (slot.body.i !== undefined && holdsTask(slot)) address.set(slot.body.i, { pack: pack.id, slot: k });
    });
  }
  for (const id of ids) {
    const place = address.get(id) ?? packOf(id);
    const pack = place ? byId.get(place.pack) : undefined;
    const slot = place ? pack?.slots[place.slot] : undefined;
    if (!pack || !slot || !holdsTask(slot) || slotId(pack, place!.slot) !== id) continue;
    found.set(id, { pack, k: place!.slot, slot });
  }
  const configs = new Map<string, QueueConfig>();
  if (withConfigs) for (const row of rows) configs.set(row.queue, queueConfigOfColumns(row, CONFIG));
  return { found, packIds: new Set(byId.keys()), configs };
}
