import { sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { PACK_ID_CHARS, PACK_SLOTS, packOf } from "../packs/pack-ids";

/**
 * Which of `ids` are pack tasks (src/engine/packs/), in at most one read: an id names its pack by its first 24
 * characters and its slot by the last two (pack-ids.ts). Every other id is left to the row store, which
 * answers an id it does not hold as it always has (`not_found`, or an item's `not_found`).
 *
 * Why a read and not the id's shape alone: a row task's ULID has the same alphabet and length as a pack task's
 * id, so only the packs table can say whose it is. The read is of primary keys only: no pack is decoded.
 *
 * Why no read at all for most row tasks (docs/design/packs.md, "Round trips of the served store"): an id whose
 * last two characters name no slot a pack has (`couldBePackTask`: 26 characters, a slot below PACK_SLOTS,
 * i.e. "00".."33" — about 1 in 10 random ULIDs) is no pack task's, so a write of such ids goes to the row
 * store in its own call. That holds because the served store never keeps a client's own id in packs
 * (route-enqueue.ts: a call with one goes into rows; `pack_ids` is the pack store's alone), and every id a
 * pack has ever made names one of its slots.
 */
export async function packTaskIds(db: Db, ids: readonly string[]): Promise<Set<string>> {
  const asked = [...new Set(ids.filter(couldBePackTask))];
  if (asked.length === 0) return new Set();
  const rows = await db.all<{ id: string }>(sql`
    SELECT asked.value AS id FROM json_each(${JSON.stringify(asked)}) AS asked
    WHERE EXISTS (SELECT 1 FROM packs WHERE packs.id = substr(asked.value, 1, ${PACK_ID_CHARS}))`);
  return new Set(rows.map((row) => row.id));
}

/** Whether `id` has the shape of a task id a pack made: a pack id and a slot below PACK_SLOTS (pack-ids.ts). */
export function couldBePackTask(id: string): boolean {
  const place = packOf(id);
  return place !== null && place.slot < PACK_SLOTS;
}

/** `items` split by where their task lives, each side keeping the items' order and their input positions. */
export interface SplitItems<T> {
  packs: T[];
  rows: T[];
  /** For each input position: which side, and its index there. */
  order: Array<{ side: "packs" | "rows"; at: number }>;
}

/** Splits items by `packTaskIds`. */
export function splitItems<T extends { id: string }>(items: readonly T[], onPacks: Set<string>): SplitItems<T> {
  const split: SplitItems<T> = { packs: [], rows: [], order: [] };
  for (const item of items) {
    const side = onPacks.has(item.id) ? "packs" : "rows";
    split.order.push({ side, at: split[side].length });
    split[side].push(item);
  }
  return split;
}

/** The answers of both sides put back in input order. */
export function inInputOrder<T, A>(split: SplitItems<T>, answers: { packs: A[]; rows: A[] }): A[] {
  return split.order.map(({ side, at }) => answers[side][at]!);
}
