import { sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { PACK_ID_CHARS, TASK_ID_CHARS } from "../packs/pack-ids";

/**
 * Which of `ids` are pack tasks (src/engine/packs/), in one read: an id names its pack by its first 24
 * characters (pack-ids.ts), or is a client's own id kept in `pack_ids`. Every other id is left to the row
 * store, which answers an id it does not hold as it always has (`not_found`, or an item's `not_found`).
 *
 * Why a read and not the id's shape: a row task's ULID has the same alphabet and length as a pack task's id,
 * so only the packs table can say whose it is. The read is of primary keys only: no pack is decoded.
 */
export async function packTaskIds(db: Db, ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await db.all<{ id: string }>(sql`
    SELECT asked.value AS id FROM json_each(${JSON.stringify([...new Set(ids)])}) AS asked
    WHERE EXISTS (SELECT 1 FROM pack_ids WHERE pack_ids.id = asked.value)
       OR (length(asked.value) = ${TASK_ID_CHARS}
           AND EXISTS (SELECT 1 FROM packs WHERE packs.id = substr(asked.value, 1, ${PACK_ID_CHARS})))`);
  return new Set(rows.map((row) => row.id));
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
