import { monotonicFactory } from "ulid";

/**
 * Addressing: the ids edgeq generates carry their partition's slot, so a single-task call (get, complete,
 * fail, heartbeat, cancel) finds the one database that holds the task from the id alone — no lookup table
 * written per task, no fan-out over shards.
 *
 * A ULID is 10 characters of time and 16 of randomness (Crockford base32). The first SLOT_CHARS characters
 * of the randomness hold the slot (20 bits: about a million partitions); the other 12 stay random (60
 * bits), and ids of one partition still sort by time. Ids that do not carry a slot — a client's own, a
 * chained child of one, those made before sharding — are found through `task_addresses` or on the home
 * database (src/shards/task-locator.ts).
 */
const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
const SLOT_OFFSET = 10;
const SLOT_CHARS = 4;
/** Why 2^20: four base32 characters; slot 0 is never assigned, so an id of zeros means "no slot". */
export const MAX_SLOT = 32 ** SLOT_CHARS - 1;

export function encodeSlot(slot: number): string {
  let out = "";
  for (let i = SLOT_CHARS - 1; i >= 0; i--) out += CROCKFORD[Math.floor(slot / 32 ** i) % 32];
  return out;
}

/** A GLOB pattern matching exactly the ids that carry this slot (what a move of one partition takes). */
export function slotIdGlob(slot: number): string {
  return "?".repeat(SLOT_OFFSET) + encodeSlot(slot) + "*";
}

/** The slot an id's characters name (it may not be assigned: a client's id carries random characters). */
export function decodeSlot(id: string): number | null {
  if (id.length !== 26) return null;
  let slot = 0;
  for (const ch of id.slice(SLOT_OFFSET, SLOT_OFFSET + SLOT_CHARS).toUpperCase()) {
    const digit = CROCKFORD.indexOf(ch);
    if (digit < 0) return null;
    slot = slot * 32 + digit;
  }
  return slot === 0 ? null : slot;
}

/** Whether an id carries this slot. */
export function carriesSlot(id: string, slot: number): boolean {
  return decodeSlot(id) === slot;
}

/**
 * A generator of time-ordered ids carrying a slot (monotonic within a millisecond, like `ulid`'s). When `now`
 * goes back (an injected clock, a clock stepped back), it starts a fresh monotonic sequence at `now`: `ulid`'s
 * factory would answer with the later time it saw last, an id from the future for this `now`, which the
 * engine refuses (ids must not be ahead of their enqueue: purges walk ids in time order).
 */
export function slotIdFactory(): (slot: number, now: number) => string {
  let next = monotonicFactory();
  let last = -Infinity;
  return (slot, now) => {
    if (now < last) next = monotonicFactory();
    last = now;
    const id = next(now);
    return id.slice(0, SLOT_OFFSET) + encodeSlot(slot) + id.slice(SLOT_OFFSET + SLOT_CHARS);
  };
}
