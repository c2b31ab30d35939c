import { sql, type SQL } from "drizzle-orm";
import type { Db } from "../../db/client";
import { overBytes, utf8Bytes } from "../../contracts/json-value";
import { slotAddress, type Pack, type SlotBody, type SpillField } from "./pack-row";

/**
 * Spill (docs/design/packs.md, "Side rows"): a result, an error history or a checkpoint too large for its
 * pack's row is kept in a `pack_spill` row keyed by its slot's address, so that a pack of 100 tasks can
 * take 100 results of MAX_PAYLOAD_BYTES (25 MiB) where a row holds 2 MB — the one task's value moves out,
 * never failing the rest of its batch. Small values (the common case) stay in the slot: no extra row.
 */

/**
 * A value above this always spills. 4 KiB: 100 slots × 3 fields × 4 KiB is 1.2 MB, which with the payloads
 * (cut at PACK_MAX_BYTES when enqueued) could still pass the budget — hence also PACK_ROW_BUDGET — but a
 * typical result (a status, an id, a URL) stays in its slot and costs no row.
 */
export const SPILL_AT_BYTES = 4 * 1024;

/** Most bytes of slot JSON a pack row keeps: 1.5 MiB, under D1's 2 MB per row with room for the fixed-width
 * columns and the lease entries; past it the largest values still inline spill first. */
export const PACK_ROW_BUDGET = 1.5 * 1024 * 1024;

const FIELDS: SpillField[] = ["r", "er", "cp"];

const keyOf = (address: string, field: SpillField) => `${address}\u0000${field}`;

/** Reads the spill rows of the packs that have any, and puts their values back into the slots' bodies. */
export async function loadSpill(db: Db, packs: Pack[]): Promise<void> {
  const spilling = packs.filter((p) => p.slots.some((s) => s.body.sp?.length));
  for (const pack of packs) pack.spilled = new Map();
  if (spilling.length === 0) return;
  const rows = await db.all<{
    task_id: string;
    field: SpillField;
    value: string;
  }>(sql`SELECT s.task_id, s.field, s.value
    FROM json_each(${JSON.stringify(spilling.map((p) => p.id))}) AS j
    JOIN pack_spill s ON s.task_id >= j.value AND s.task_id < j.value || '~'`);
  const byKey = new Map(rows.map((r) => [keyOf(r.task_id, r.field), r.value]));
  for (const pack of spilling) {
    pack.slots.forEach((slot, k) => {
      for (const field of slot.body.sp ?? []) {
        const key = keyOf(slotAddress(pack, k), field);
        const value = byKey.get(key);
        if (value === undefined) continue;
        pack.spilled!.set(key, value);
        (slot.body as unknown as Record<string, unknown>)[field] = JSON.parse(value);
      }
      delete slot.body.sp;
    });
  }
}

/**
 * The pack's bodies as its row stores them (JSON text), with every value over SPILL_AT_BYTES, then the
 * largest others while the row is over PACK_ROW_BUDGET, moved out; and the statements that write the spill
 * rows that changed and delete those no longer used — for the pack's write batch.
 */
export function encodeBodies(pack: Pack): { slots: string; statements: SQL[] } {
  const out = new Map<string, { k: number; field: SpillField; json: string }>();
  // The bodies as stored: each slot's own, copied only where this changes it (`sp` dropped, a field moved out).
  const bodies: SlotBody[] = pack.slots.map((slot) => slot.body);
  const own = (k: number): SlotBody => {
    if (bodies[k] === pack.slots[k]!.body) bodies[k] = { ...bodies[k]! };
    return bodies[k]!;
  };
  const inline: Array<{ k: number; field: SpillField; json: string }> = [];
  pack.slots.forEach(({ body }, k) => {
    if (body.sp !== undefined) delete own(k).sp;
    for (const field of FIELDS) {
      if (body[field] === undefined) continue;
      const json = JSON.stringify(body[field]);
      if (overBytes(json, SPILL_AT_BYTES) !== null) out.set(keyOf(slotAddress(pack, k), field), { k, field, json });
      else inline.push({ k, field, json });
    }
  });
  const moveOut = (k: number, field: SpillField) => {
    const body = own(k);
    delete body[field];
    (body.sp ??= []).push(field);
  };
  for (const { k, field } of out.values()) moveOut(k, field);
  let slots = JSON.stringify(bodies);
  const over = overBytes(slots, PACK_ROW_BUDGET);
  if (over !== null) {
    let total = over;
    inline.sort((x, y) => y.json.length - x.json.length);
    for (const value of inline) {
      if (total <= PACK_ROW_BUDGET) break;
      out.set(keyOf(slotAddress(pack, value.k), value.field), value);
      moveOut(value.k, value.field);
      total -= utf8Bytes(value.json);
    }
    slots = JSON.stringify(bodies);
  }
  const statements: SQL[] = [];
  const loaded = pack.spilled ?? new Map<string, string>();
  for (const [key, { k, field, json }] of out) {
    if (loaded.get(key) === json) continue;
    statements.push(sql`INSERT INTO pack_spill (task_id, field, value) VALUES (${slotAddress(pack, k)}, ${field}, ${json})
      ON CONFLICT (task_id, field) DO UPDATE SET value = excluded.value`);
  }
  for (const key of loaded.keys()) {
    if (out.has(key)) continue;
    const [address, field] = key.split("\u0000");
    statements.push(sql`DELETE FROM pack_spill WHERE task_id = ${address} AND field = ${field}`);
  }
  return { slots, statements };
}
