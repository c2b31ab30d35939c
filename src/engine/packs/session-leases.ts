import { sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { SESSION_LEASE_WINDOW } from "../../contracts/limits";
import { sessionHolderSuffix } from "../../contracts/session";
import type { FencedItem } from "../ack";
import { listLiveSegments } from "../live-front";
import { readPacks } from "./pack-commit";
import { PACK_SLOTS } from "./pack-ids";
import { slotId } from "./pack-row";
import { slotToken } from "./slot-rules";

/**
 * The pack store's `sessionLeases`: for each (queue, priority) run of the live packs, its first due packs in
 * lease order — SESSION_LEASE_WINDOW tasks' worth of full packs, as the D1 store reads that many entries — and
 * of them those with a processing slot, read whole (a slot's id may be its client's, kept in its body); the
 * slots processing under the session's holder mark and not expired, each with its own token.
 *
 * @example
 * const held = await readPackSessionLeases(db, "emails", "k3JzQ9vX2mPq8RtW", Date.now());
 */
export async function readPackSessionLeases(
  db: Db,
  queue: string,
  session: string,
  now: number,
): Promise<FencedItem[]> {
  const suffix = sessionHolderSuffix(session);
  const segments = await listLiveSegments(db, sql`packs`, queue);
  const held: FencedItem[] = [];
  for (const segment of segments) {
    const ids = await db.all<{ id: string }>(sql`SELECT id FROM (SELECT id, st FROM packs INDEXED BY packs_live
        WHERE finished_at IS NULL AND queue = ${queue} AND priority = ${segment.priority} AND run_at <= ${now}
        ORDER BY run_at, id LIMIT ${SESSION_LEASE_WINDOW / PACK_SLOTS})
      WHERE instr(st, 'r') > 0`);
    if (ids.length === 0) continue;
    const packs = await readPacks(
      db,
      ids.map((r) => r.id),
    );
    for (const pack of packs.values()) {
      pack.slots.forEach((slot, k) => {
        const lease = slot.lease;
        if (slot.st !== "r" || lease === null || lease.e <= now || !(lease.h ?? "").endsWith(suffix)) return;
        held.push({ id: slotId(pack, k), leaseToken: slotToken(lease, k) });
      });
    }
  }
  return held;
}
