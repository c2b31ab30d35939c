import { monotonicFactory } from "ulid";
import { MAX_BATCH, MAX_ENQUEUE_CHUNK_BYTES } from "../../contracts/limits";

/**
 * A pack's task ids (docs/design/packs.md, "Ids"): a pack id is a ULID without two of its random characters
 * (its time prefix first, so ids stay time-ordered for retention), and task k of the pack is
 * `packId + slotChars(k)` — a 26-character ULID-shaped id that names its pack and slot, so inspection by id
 * is a primary-key read. A client's own id cannot carry a slot: it goes through `pack_ids`.
 */

/**
 * Most tasks in one pack: MAX_BATCH, so one full lease is one pack and one row rewritten; a larger pack would
 * only make every lease and ack rewrite more bytes for the same rows billed.
 */
export const PACK_SLOTS = MAX_BATCH;

/**
 * Most bytes of slot JSON a pack is cut at when enqueued: MAX_ENQUEUE_CHUNK_BYTES (1 MiB), i.e. no pack is
 * bigger than one enqueue statement's JSON today. D1 allows 2 MB per row; what a pack gains after enqueue
 * (results, errors, checkpoints) spills to side rows past PACK_ROW_BUDGET (spill.ts).
 */
export const PACK_MAX_BYTES = MAX_ENQUEUE_CHUNK_BYTES;

/** A pack id's length: a ULID's 26 characters less the two a slot takes (`newPackId`). */
export const PACK_ID_CHARS = 24;

/** A task id's length, in either layout: a ULID's. */
export const TASK_ID_CHARS = 26;

/** Crockford base32, as ULIDs use it: a slot is two characters at the end of its task's id. */
export const B32 = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/** The two characters naming slot k (0 ≤ k < 1024). */
export function slotChars(k: number): string {
  return B32[Math.floor(k / 32)]! + B32[k % 32]!;
}

/** (pack id, slot) a task id made by `slotChars` names, or null when it cannot be one. */
export function packOf(taskId: string): { pack: string; slot: number } | null {
  if (taskId.length !== TASK_ID_CHARS) return null;
  const hi = B32.indexOf(taskId[24]!);
  const lo = B32.indexOf(taskId[25]!);
  if (hi < 0 || lo < 0) return null;
  return { pack: taskId.slice(0, PACK_ID_CHARS), slot: hi * 32 + lo };
}

let nextUlid = monotonicFactory();
let lastNow = -Infinity;

/**
 * A fresh pack id: a monotonic ULID of `now` without two of its random characters (the slot takes their place
 * at the end) — characters 10–11, or, for an id made by `newId` (the shard layer's, whose characters 10–13
 * name the task's partition: src/shards/task-slot.ts), characters 14–15, so that every task id of the pack
 * names its partition as a row's id does. Never the last two: a monotonic factory counts up there, and two
 * packs made in one millisecond would share an id.
 */
export function newPackId(now: number, newId?: (now: number) => string): string {
  if (newId) {
    const id = newId(now);
    return id.slice(0, 14) + id.slice(16);
  }
  // A clock that went back (an injected one) starts a fresh sequence at `now`: a monotonic factory would
  // answer with the latest time it saw, an id from the future that retention's walk by id would skip until
  // then (as src/shards/task-slot.ts's ids do).
  if (now < lastNow) nextUlid = monotonicFactory();
  lastNow = now;
  const u = nextUlid(now);
  return u.slice(0, 10) + u.slice(12);
}
