import type { AckKind } from "../ack";

/** The shapes of a pack row as JavaScript reads it (pack-row.ts decodes and encodes them). */

/** A lease entry: token, expiry, claim deadline, holder, length (s), leased at; once ended, when and how. */
export interface LeaseEntry {
  k: string;
  e: number;
  c: number | null;
  h: string | null;
  v: number;
  t: number;
  /** 1: this lease took the slot over from an expired one. */
  x?: number;
  /** 1: one entry for every slot a lease took from this pack (stored once: pack-row.ts), each slot's token `k`
   * and its own two slot characters (slot-rules.ts `slotToken`); absent: the entry's token is `k` itself, one
   * entry per slot, as packs leased before 2026-11-28 hold them. */
  s?: 1;
  /** Ended at (ms), and by which ack (a repeat of that ack with this token is recognised). */
  f?: number;
  w?: AckKind;
}

/** A slot's own data, under short keys (stored once per task). */
export interface SlotBody {
  /** Payload (JSON value). */
  b: unknown;
  /** Group, dedupe key, the client's own id. */
  g?: string;
  d?: string;
  i?: string;
  /** Its own run time (a retry, a release), else the pack's. */
  t?: number;
  /** Started (first lease), updated, finished (ms). */
  st?: number;
  u?: number;
  f?: number;
  er?: StoredError[];
  r?: unknown;
  p?: number;
  m?: string;
  cp?: unknown;
  /** 1: a cancel was requested while processing (operator-writes.ts); the holder's next write ends it cancelled. */
  cr?: number;
  /** The fields kept in `pack_spill` rows instead (spill.ts). */
  sp?: SpillField[];
  /** The partition slot a delivery gave it (transit-in.ts: `DeliveredRow.rowSlot`, the `tasks.slot` column of
   * a row), when its id does not carry the partition it joined. */
  sl?: number;
}

/** One entry of a task's error history, as stored (`at` in ms; the view renders it ISO). */
export interface StoredError {
  attempt: number;
  at: number;
  message: string;
  kind: string;
}

/** What may spill: result, errors, checkpoint. */
export type SpillField = "r" | "er" | "cp";

/** p pending (at its run time), w pending at its own `t`, r processing, c completed, d dead, x cancelled; o no
 * task here: taken out for a move, or never put in on the pack's copy a move made (transit-out.ts). */
export type SlotChar = "p" | "w" | "r" | "c" | "d" | "x" | "o";

export interface Slot {
  st: SlotChar;
  a: number;
  lease: LeaseEntry | null;
  body: SlotBody;
  /** The body's `st` and `u` as stored, when decoding set them from the lease entry (pack-row.ts
   * `leaseTimes`): a splice's guard compares the body as stored. */
  stored?: Pick<SlotBody, "st" | "u">;
}

export interface Pack {
  id: string;
  queue: string;
  type: string;
  priority: number;
  runAt: number;
  maxAttempts: number;
  createdAt: number;
  finishedAt: number | null;
  /** The version read (null: a new pack, inserted). */
  ver: number | null;
  slots: Slot[];
  /** The slots' states as read (`st`; absent for a new pack): which slots a write finishes
   * (settle-dependents.ts). */
  readSt?: string;
  /** The slots' lease pointers as read (`lk`; absent for a new pack): where a spliced write finds each slot's
   * entry (slot-splice.ts). */
  readLk?: string;
  /** The spill rows read with it, by `address\u0000field`: JSON text (spill.ts). */
  spilled?: Map<string, string>;
}
