import { sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { packOf } from "./pack-ids";
import { slotId, type Pack, type Slot } from "./pack-row";
import { readPacks } from "./pack-commit";
import { holdsTask } from "./slot-rules";

/** A task found in its pack. */
export interface Located {
  pack: Pack;
  k: number;
  slot: Slot;
}

/**
 * Finds tasks by id: a client's own id through `pack_ids`, any other through the pack and slot it names
 * (pack-ids.ts) — one read of `pack_ids` and one of the packs. A slot is the id's only when its task answers
 * to that id (a client-id task is not found by its slot's address), and holds a task (not `o`). Absent ids are missing from the map.
 */
export async function locateTasks(db: Db, ids: string[]): Promise<Map<string, Located>> {
  const found = new Map<string, Located>();
  if (ids.length === 0) return found;
  const clientRows = await db.all<{ id: string; pack: string; slot: number }>(
    sql`SELECT id, pack, slot FROM pack_ids WHERE id IN (SELECT value FROM json_each(${JSON.stringify(ids)}))`,
  );
  const address = new Map(clientRows.map((r) => [r.id, { pack: r.pack, slot: r.slot }]));
  for (const id of ids) {
    if (address.has(id)) continue;
    const place = packOf(id);
    if (place) address.set(id, place);
  }
  const packs = await readPacks(
    db,
    [...address.values()].map((a) => a.pack),
  );
  for (const [id, place] of address) {
    const pack = packs.get(place.pack);
    const slot = pack?.slots[place.slot];
    if (!pack || !slot || !holdsTask(slot) || slotId(pack, place.slot) !== id) continue;
    found.set(id, { pack, k: place.slot, slot });
  }
  return found;
}
