import { sql } from "drizzle-orm";
import { configFingerprintSql } from "../queue-config";
import type { Located, PackReads } from "../packs/locate";
import { packOf } from "../packs/pack-ids";
import { decodePack, slotId, type PackRowRead } from "../packs/pack-row";
import { fenceHolds, holdsTask } from "../packs/slot-rules";
import { packsFirstHint } from "./packs-first-hint";

/**
 * The packs as this isolate's last lease of each wrote them (its UPDATE's RETURNING), so that a holder's write
 * of the slots leased here (complete, fail, release, extend, heartbeat) can skip its first read — one D1 call
 * where it was two. A memory only: what a write computes from it is guarded at write time as a write computed
 * from its own read is (slot-splice.ts: each held slot as read; a whole write: the pack's `ver`), and the
 * queue's config, taken from the packs-first hint, by its fingerprint. A guard that fails costs that call;
 * the write is then made from a fresh read (acks.ts). A write answers from it only when every item's fence
 * holds in it: a refusal (a lapsed or superseded lease, an unknown id, a repeat) is always answered from a
 * fresh read, never from a memory that may be old.
 *
 * A slot this isolate wrote after the lease is stale here (marked, `dirty`); a pack's next lease here brings it
 * back whole. A pack with spilled fields is not kept (its values are in `pack_spill`, read apart).
 */

interface Remembered {
  row: PackRowRead;
  /** Slots written here since `row` was read: their state here is not theirs. */
  dirty: Set<number>;
  bytes: number;
}

/** Bytes kept in the isolate, over all its databases: a pack's slots are at most PACK_ROW_BUDGET (1.5 MiB,
 * spill.ts), so this is five packs of large payloads or hundreds of small ones, a small part of an isolate's
 * 128 MB whatever the number of shards. Oldest forgotten first. */
const MAX_BYTES = 8 * 1024 * 1024;

/** Every database's remembered packs, by database and pack id, oldest first; one budget for all. */
const kept = new Map<string, Remembered>();
let keptBytes = 0;
let databases = 0;

function forget(key: string): void {
  const old = kept.get(key);
  if (old === undefined) return;
  keptBytes -= old.bytes;
  kept.delete(key);
}

/** What one database's store remembers (hybrid-store.ts makes one per database). */
export interface LeasedPacks {
  /** Records the packs a lease here wrote, as it returned them. */
  remember(rows: PackRowRead[]): void;
  /** The first read of a holder's write of `items` at `now`, from memory; null unless every item's id names a
   * slot of a remembered pack, not written here since, whose fence holds with the item's token, on a queue
   * with a packs-first hint (its config), of `queue` when the write is scoped to one. */
  reads(items: Array<{ id: string; leaseToken: string }>, now: number, queue?: string): PackReads | null;
  /** Marks the slots of `ids` written (their remembered state is no longer theirs). */
  written(ids: string[]): void;
}

export function leasedPacks(): LeasedPacks {
  const database = `${databases++}:`;
  return {
    remember(rows) {
      for (const row of rows) {
        const key = database + row.id;
        forget(key);
        if (row.slots.includes('"sp"')) continue;
        const size = row.slots.length + row.leases.length + row.st.length * 3;
        if (size > MAX_BYTES) continue;
        while (keptBytes + size > MAX_BYTES) forget(kept.keys().next().value!);
        kept.set(key, { row, dirty: new Set(), bytes: size });
        keptBytes += size;
      }
    },

    reads(items, now, queue) {
      if (items.length === 0) return null;
      const decoded = new Map<string, ReturnType<typeof decodePack>>();
      const found = new Map<string, Located>();
      const configs: PackReads["configs"] = new Map();
      const fps = new Map<string, string>();
      for (const { id, leaseToken } of items) {
        const place = packOf(id);
        const mine = place ? kept.get(database + place.pack) : undefined;
        if (!place || !mine || mine.dirty.has(place.slot) || found.has(id)) return null;
        let pack = decoded.get(place.pack);
        if (pack === undefined) decoded.set(place.pack, (pack = decodePack(mine.row)));
        const slot = pack.slots[place.slot];
        if (!slot || !holdsTask(slot) || slotId(pack, place.slot) !== id) return null;
        if (slot.body.cr === 1 || !fenceHolds(slot, place.slot, leaseToken, now)) return null;
        if (queue !== undefined && pack.queue !== queue) return null;
        const hint = packsFirstHint(pack.queue);
        if (!hint) return null;
        configs.set(pack.queue, hint.config);
        fps.set(pack.queue, hint.fp);
        found.set(id, { pack, k: place.slot, slot });
      }
      const conditions = [...fps].map(([queue, fp]) => sql`${configFingerprintSql(queue)} = ${fp}`);
      for (const pack of decoded.values()) pack.spilled = new Map();
      return { found, packIds: new Set(decoded.keys()), configs, remembered: { conditions } };
    },

    written(ids) {
      for (const id of ids) {
        const place = packOf(id);
        if (place) kept.get(database + place.pack)?.dirty.add(place.slot);
      }
    },
  };
}
