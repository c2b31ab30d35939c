import { BACKOFF_JITTER } from "../../contracts/limits";
import type { TaskState } from "../../contracts/states";
import type { QueueConfig } from "../queue-config";
import { backoffBoundsMs } from "../retry-policy";
import { slotChars } from "./pack-ids";
import type { LeaseEntry, Pack, Slot, SlotChar } from "./pack-types";

/**
 * The engine's rules for one slot of a pack, the same as for one row of `tasks`: leasability
 * (src/engine/redelivery.ts `leasableAtSql`), the holder's fence (src/engine/ack.ts `leaseFenceSql`) and the
 * backoffs (src/engine/retry-policy.ts: the same `backoffBoundsMs`, the same jitter). The D1 store states them
 * in SQL over a row; a pack's slots are rewritten by JavaScript (pack-commit.ts), so they are stated here
 * over a slot — test/engine's conformance suite holds both stores to the same answers.
 */

const JITTER_PER_MILLE = Math.round(BACKOFF_JITTER * 1000);

/** The queue's settings a slot's rules read. */
export type SlotConfig = Pick<
  QueueConfig,
  "backoff_base_s" | "backoff_cap_s" | "visibility_timeout_s" | "max_attempts"
>;

/** A slot's run time: its own (a retry, a release) or its pack's. */
export function slotRunAt(pack: Pack, slot: Slot): number {
  return slot.body.t ?? pack.runAt;
}

/** The task state a slot's state character stands for. */
export function slotState(slot: Slot): TaskState {
  switch (slot.st) {
    case "p":
    case "w":
      return "pending";
    case "r":
      return "processing";
    case "c":
      return "completed";
    case "d":
      return "dead";
    default:
      return "cancelled";
  }
}

/** The slot characters of each state a filter may name (no `waiting` or `expired` task is in a pack: a pack
 * task has no dependencies and no start deadline). */
export const CHARS_OF_STATE: Record<TaskState, readonly SlotChar[]> = {
  pending: ["p", "w"],
  waiting: [],
  processing: ["r"],
  completed: ["c"],
  dead: ["d"],
  cancelled: ["x"],
  expired: [],
};

/** A task is in the slot: not `o` (taken out for a move, or never put in here: transit-out.ts). Every read
 * of slots skips the others. */
export function holdsTask(slot: Slot): boolean {
  return slot.st !== "o";
}

/** Pending, waiting for a retry, or processing: the slot keeps its pack live. The ONE definition of `live`. */
export function isLive(slot: Slot): boolean {
  return slot.st === "p" || slot.st === "w" || slot.st === "r";
}

/** The backoff after an expired lease of attempt `attempts` (no jitter), as `expiryBackoffMsSql`. */
export function expiryBackoffMs(attempts: number, config: SlotConfig): number {
  return backoffBoundsMs(attempts, config.backoff_base_s, config.backoff_cap_s).max;
}

/** A failure's backoff, jittered in [1 − BACKOFF_JITTER, 1] as `backoffDelayMsSql`. */
export function failureBackoffMs(attempts: number, config: SlotConfig): number {
  const max = expiryBackoffMs(attempts, config);
  const jitter = 1000 - JITTER_PER_MILLE + Math.floor(Math.random() * (JITTER_PER_MILLE + 1));
  return Math.floor((max * jitter) / 1000);
}

/** An unclaimed provisional lease (`unclaimedSql`): handed to a long poll, not claimed by `now`. */
export function isUnclaimed(slot: Slot, now: number): boolean {
  return slot.st === "r" && slot.lease !== null && slot.lease.c !== null && slot.lease.c <= now;
}

/** When a live slot becomes leasable (ms), or null when only the reaper can move it on (`leasableAtSql`). */
export function leasableAt(pack: Pack, slot: Slot, config: SlotConfig): number | null {
  if (slot.st === "p" || slot.st === "w") return slotRunAt(pack, slot);
  if (slot.st !== "r" || slot.lease === null) return null;
  if (slot.body.cr === 1) return null;
  if (slot.lease.c !== null) return slot.lease.c;
  if (slot.a < pack.maxAttempts) return slot.lease.e + expiryBackoffMs(slot.a, config);
  return null;
}

/**
 * The token of slot `k` under `lease`, as its holder was given it: a shared entry's (`s`) token and the slot's two
 * characters — one entry serves every slot a lease took from the pack, so a lease of 100 appends one entry to
 * `leases`, not 100, and each task still has a token of its own — else the entry's token itself.
 */
export function slotToken(lease: LeaseEntry, k: number): string {
  return lease.s === 1 ? lease.k + slotChars(k) : lease.k;
}

/** The holder's fence (`leaseFenceSql`): slot `k` processing, under this very token, the lease not expired. */
export function fenceHolds(slot: Slot, k: number, token: string, now: number): slot is Slot & { lease: LeaseEntry } {
  return slot.st === "r" && slot.lease !== null && slotToken(slot.lease, k) === token && slot.lease.e > now;
}
