import { slotChars } from "./pack-ids";
import { isLive, leasableAt, type SlotConfig } from "./slot-rules";
import type { LeaseEntry, Pack, Slot, SlotBody, SlotChar } from "./pack-types";

export type { LeaseEntry, Pack, Slot, SlotBody, SlotChar, SpillField, StoredError } from "./pack-types";

/**
 * A pack row (migration 0022, docs/design/packs.md) as JavaScript reads and rewrites it. The row's
 * fixed-width columns hold each slot's state (`st`), attempts (`at`, char(48 + attempts)) and lease entry
 * (`lk`, char(48 + index into `leases`), or a space); `slots` holds each slot's body. A write decodes the
 * packs it touches, changes their slots, and encodes each back whole (`encodePack`), in one guarded batch
 * (pack-commit.ts): one row written per pack, whatever the number of its tasks.
 */

/** The columns a pack is read with (`leases`, `slots` as JSON text). */
export const PACK_COLUMNS = `id, queue, type, priority, run_at, max_attempts, created_at, finished_at, ver, st, at, lk,
  json(leases) AS leases, json(slots) AS slots`;

export interface PackRowRead {
  id: string;
  queue: string;
  type: string;
  priority: number;
  run_at: number;
  max_attempts: number;
  created_at: number;
  finished_at: number | null;
  ver: number;
  st: string;
  at: string;
  lk: string;
  leases: string;
  slots: string;
}

/** A slot's `lk` character when it has no lease entry. */
const SPACE = 32;

/** A pack as read. */
export function decodePack(row: PackRowRead): Pack {
  const leases = JSON.parse(row.leases) as LeaseEntry[];
  const bodies = JSON.parse(row.slots) as SlotBody[];
  const slots: Slot[] = [];
  for (let k = 0; k < bodies.length; k++) {
    const body = bodies[k]!;
    const lk = row.lk.charCodeAt(k);
    // Each slot its own copy of its entry (equal entries are stored once: encodeSlots).
    const lease = lk === SPACE ? null : { ...leases[lk - 48]! };
    const slot: Slot = { st: row.st[k] as SlotChar, a: row.at.charCodeAt(k) - 48, lease, body };
    const stored = lease ? leaseTimes(body, lease) : undefined;
    if (stored) slot.stored = stored;
    slots.push(slot);
  }
  return {
    id: row.id,
    queue: row.queue,
    type: row.type,
    priority: row.priority,
    runAt: row.run_at,
    maxAttempts: row.max_attempts,
    createdAt: row.created_at,
    finishedAt: row.finished_at,
    ver: row.ver,
    slots,
    readSt: row.st,
    readLk: row.lk,
  };
}

/**
 * A slot's first start (`st`) and last update (`u`) as its lease entry implies them. The SQL lease
 * (lease-sql.ts) writes a slot's state, attempts and lease entry but not its body — a body edit per slot
 * was most of that statement (one JSON path per slot taken) — so a leased slot's body may lack the lease's
 * time: a slot with no `st` was first started by the lease it points at (every write that moves a slot
 * off a lease is a JavaScript write of the body as decoded here, so `st` is stored by then), and it was
 * updated no earlier than that lease.
 */
function leaseTimes(body: SlotBody, lease: LeaseEntry): Pick<SlotBody, "st" | "u"> | undefined {
  if (body.st !== undefined && body.u !== undefined && body.u >= lease.t) return undefined;
  const stored = { st: body.st, u: body.u };
  body.st ??= lease.t;
  if (body.u === undefined || body.u < lease.t) body.u = lease.t;
  return stored;
}

/** A slot's body as stored (without what `leaseTimes` set from its lease entry), in its stored key order. */
export function storedBody(slot: Slot): SlotBody {
  const body: SlotBody = { ...slot.body };
  const stored = slot.stored;
  if (!stored) return body;
  if (stored.st === undefined) delete body.st;
  if (stored.u === undefined) delete body.u;
  else body.u = stored.u;
  return body;
}

/** A slot's address: its pack's id and its index (the id a task made by the store has). */
export function slotAddress(pack: Pack, k: number): string {
  return pack.id + slotChars(k);
}

/** A slot's task id: the client's own, else its address. */
export function slotId(pack: Pack, k: number): string {
  return pack.slots[k]!.body.i ?? slotAddress(pack, k);
}

/**
 * What a pack's row says about its slots, computed from the slots alone, by this one function, on every
 * write: how many are live and pending, when the next becomes leasable (`next_at`: a lease reads only packs
 * whose time has come, so a pack whose live slots are all held by kept leases is not read at all, and a
 * heartbeat moves it), and `finished_at` exactly when none is live — so the live index, and retention, can
 * never lose a live slot to counts kept apart from the slots.
 */
export function packFigures(pack: Pack, config: SlotConfig, now: number) {
  let live = 0;
  let ready = 0;
  let nextAt: number | null = null;
  let rareAt: number | null = null;
  for (const slot of pack.slots) {
    if (!isLive(slot)) continue;
    live++;
    if (slot.st === "p") ready++;
    const at = leasableAt(pack, slot, config);
    if (at === null) continue;
    nextAt = nextAt === null ? at : Math.min(nextAt, at);
    if (slot.st !== "p") rareAt = rareAt === null ? at : Math.min(rareAt, at);
  }
  const finishedAt = live === 0 ? (pack.finishedAt ?? now) : null;
  return { n: pack.slots.length, live, ready, nextAt, rareAt, finishedAt };
}

/** The fixed-width columns and lease list of a pack's slots; equal entries are stored once (so `leases`
 * holds only entries some slot points at: it never grows past the pack's slots). */
export function encodeSlots(pack: Pack): { st: string; at: string; lk: string; leases: string } {
  const index = new Map<string, number>();
  const leases: string[] = [];
  let st = "";
  let at = "";
  let lk = "";
  for (const slot of pack.slots) {
    st += slot.st;
    at += String.fromCharCode(48 + slot.a);
    if (slot.lease === null) {
      lk += " ";
      continue;
    }
    const json = JSON.stringify(slot.lease);
    let i = index.get(json);
    if (i === undefined) {
      i = leases.length;
      index.set(json, i);
      leases.push(json);
    }
    lk += String.fromCharCode(48 + i);
  }
  return { st, at, lk, leases: `[${leases.join(",")}]` };
}
