import type { Db } from "../../db/client";
import type { SQL } from "drizzle-orm";
import { EdgeqError, LeaseLostError, NotFoundError, TaskCancelledError } from "../../contracts/errors";
import { jsonValueProblem, storedJsonError } from "../../contracts/json-value";
import type { StoredTask } from "../../contracts/stored-task";
import type { AckOutcome, AckScope, FencedItem } from "../ack";
import type { CompleteItem } from "../complete";
import { countersStatementSql, outcomeEvents } from "../counters";
import type { ExtendItem } from "../extend";
import { truncateMessage, type FailItem } from "../fail";
import type { HeartbeatRequest } from "../heartbeat";
import type { HolderAcks } from "../store-writes";
import {
  applyPackWrites,
  cancelRequested,
  endCancelled,
  endLease,
  guardedBy,
  type HolderWrite,
  type HolderWriteHow,
} from "./acks";
import { locateForWrite, locateTasks, roundReads, type Located, type PackReads } from "./locate";
import { commitGuarded, withRetries } from "./pack-commit";
import { holderPackWrites, readSlot, splicesPack } from "./slot-splice";
import { failureBackoffMs, fenceHolds, slotState } from "./slot-rules";
import { storedSlot } from "./stored-slot";
import { slotId } from "./pack-row";

/** Items by id, the first of a repeated id (the one applied: acks.ts). */
function firstById<T extends FencedItem>(items: T[]): Map<string, T> {
  const byId = new Map<string, T>();
  for (const item of items) if (!byId.has(item.id)) byId.set(item.id, item);
  return byId;
}

/** What an ended slot counts (src/engine/counters.ts `outcomeEvents`), from its state now. */
const ended = (at: Located, now: number, attempt: boolean) =>
  outcomeEvents(
    { queue: at.pack.queue, type: at.pack.type, state: slotState(at.slot), started_at: at.slot.body.st ?? null },
    now,
    attempt,
  );

/** Runs the items that passed their own checks; the others answer their problem, in input order. */
async function withProblems<T extends FencedItem>(
  items: T[],
  problemOf: (item: T) => EdgeqError | null,
  run: (fitting: T[]) => Promise<AckOutcome[]>,
): Promise<AckOutcome[]> {
  const problems = items.map(problemOf);
  const applied = await run(items.filter((_, k) => problems[k] === null));
  let next = 0;
  return items.map((item, k) => (problems[k] ? { id: item.id, ok: false, error: problems[k] } : applied[next++]!));
}

/** A completion's problem before any write: a result that cannot be stored exactly. */
const completeProblem = (i: CompleteItem) => storedJsonError(i.result, "result", `task ${i.id}: `);

/** A failure's problem before any write: a message that cannot be stored exactly. */
function failProblem(i: FailItem): EdgeqError | null {
  const problem = jsonValueProblem(i.message, "error");
  return problem ? new EdgeqError("invalid_request", `task ${i.id}: ${problem}`) : null;
}

/** What a completion of one of `items` does to its slot: completed, its result stored. */
function completeWrite(items: CompleteItem[]): HolderWrite {
  const byId = firstById(items);
  return {
    kind: "complete",
    apply: (at, at_now) => {
      if (cancelRequested(at)) return endCancelled(at, at_now, "complete");
      at.slot.st = "c";
      at.slot.body.r = byId.get(slotId(at.pack, at.k))!.result ?? null;
      at.slot.body.p = 100;
      at.slot.body.f = at_now;
      endLease(at, "complete", at_now);
      return ended(at, at_now, false);
    },
  };
}

/** What a failure of one of `items` does to its slot: its error appended; a retry after `retryAfterS` or the
 * queue's jittered backoff, or dead (permanent, last attempt). */
function failWrite(items: FailItem[]): HolderWrite {
  const byId = firstById(items);
  return {
    kind: "fail",
    apply: (at, at_now, config) => {
      const item = byId.get(slotId(at.pack, at.k))!;
      const permanent = item.retryable === false;
      const { slot } = at;
      (slot.body.er ??= []).push({
        attempt: slot.a,
        at: at_now,
        message: truncateMessage(item.message),
        kind: permanent ? "permanent" : "error",
      });
      if (cancelRequested(at)) return endCancelled(at, at_now, "fail");
      if (permanent || slot.a >= at.pack.maxAttempts) {
        slot.st = "d";
        slot.body.f = at_now;
      } else {
        slot.st = "w";
        slot.body.t =
          at_now + (item.retryAfterS == null ? failureBackoffMs(slot.a, config) : Math.round(item.retryAfterS * 1000));
      }
      endLease(at, "fail", at_now);
      return ended(at, at_now, true);
    },
  };
}

/** What a release does to its slot: pending at once, the attempt refunded. */
const RELEASE: HolderWrite = {
  kind: "release",
  apply: (at, at_now) => {
    at.slot.body.t = at_now;
    at.slot.a = Math.max(at.slot.a - 1, 0);
    if (cancelRequested(at)) return endCancelled(at, at_now, "release");
    at.slot.st = "w";
    endLease(at, "release", at_now);
    return ended(at, at_now, false);
  },
};

/** completeTasks: completed, its result stored (a result too large for the pack's row spills: spill.ts). */
export function completePackTasks(
  db: Db,
  items: CompleteItem[],
  now: number,
  scope?: AckScope,
  how?: HolderWriteHow,
  preread?: PackReads,
) {
  return withProblems(items, completeProblem, (fitting) =>
    applyPackWrites(db, fitting, completeWrite(fitting), now, scope, how, preread),
  );
}

/** failTasks: retry after `retryAfterS` or the queue's jittered backoff, or dead (permanent, last attempt). */
export function failPackTasks(
  db: Db,
  items: FailItem[],
  now: number,
  scope?: AckScope,
  how?: HolderWriteHow,
  preread?: PackReads,
) {
  return withProblems(items, failProblem, (fitting) =>
    applyPackWrites(db, fitting, failWrite(fitting), now, scope, how, preread),
  );
}

/** releaseTasks: pending at once, the attempt refunded. */
export function releasePackTasks(
  db: Db,
  items: FencedItem[],
  now: number,
  scope?: AckScope,
  how?: HolderWriteHow,
  preread?: PackReads,
) {
  return applyPackWrites(db, items, RELEASE, now, scope, how, preread);
}

/**
 * Completions, failures and releases in ONE guarded batch (an ack that carries the next lease: the lease rides
 * it, hybrid-store.ts), each item as its kind's own write answers it; outcomes in the order complete, fail,
 * release, each in input order. The caller keeps an id to one item of the whole ack (a repeat within one kind
 * is that kind's `invalid_request`, as there).
 */
export function ackPackTasks(
  db: Db,
  acks: Required<HolderAcks>,
  now: number,
  scope?: AckScope,
  preread?: PackReads,
): Promise<AckOutcome[]> {
  const items: TaggedAck[] = [
    ...acks.complete.map((i) => ({ ...i, ack: "complete" as const })),
    ...acks.fail.map((i) => ({ ...i, ack: "fail" as const })),
    ...acks.release.map((i) => ({ ...i, ack: "release" as const })),
  ];
  const problemOf = (i: TaggedAck) =>
    i.ack === "complete" ? completeProblem(i) : i.ack === "fail" ? failProblem(i) : null;
  return withProblems(items, problemOf, (fitting) => {
    // Each kind's write over its items that passed their checks, as each kind's own call builds it.
    const writes = {
      complete: completeWrite(fitting.filter((i) => i.ack === "complete")),
      fail: failWrite(fitting.filter((i) => i.ack === "fail")),
      release: RELEASE,
    };
    return applyPackWrites(db, fitting, (f) => writes[fitting[f]!.ack], now, scope, "splice", preread);
  });
}

/** An item of `ackPackTasks`, tagged with its kind. */
type TaggedAck =
  (CompleteItem & { ack: "complete" }) | (FailItem & { ack: "fail" }) | (FencedItem & { ack: "release" });

/** extendLeases: each lease to `now + visibilityTimeoutS`, else by its own length, and claimed. */
export function extendPackLeases(
  db: Db,
  items: ExtendItem[],
  now: number,
  scope?: AckScope,
  how?: HolderWriteHow,
  preread?: PackReads,
) {
  const byId = firstById(items);
  const write = {
    kind: "extend" as const,
    apply: (at: Located, at_now: number) => {
      if (cancelRequested(at)) return endCancelled(at, at_now, null);
      keepLease(at, byId.get(slotId(at.pack, at.k))!.visibilityTimeoutS, at_now);
      return [];
    },
  };
  return applyPackWrites(db, items, write, now, scope, how, preread);
}

/** A kept lease: to `now + seconds` (else its own length), claimed — the slot's own copy of its entry. */
function keepLease(at: Located, seconds: number | undefined, now: number): void {
  const lease = at.slot.lease!;
  at.slot.lease = { ...lease, e: now + (seconds ?? lease.v) * 1000, c: null };
  at.slot.body.u = now;
}

/** heartbeatTask: extends the lease, stores progress and checkpoint; refused: throws. Moves the pack's
 * `next_at` with the lease (pack-row.ts `packFigures`), so a pack held by kept leases is not read by leases. */
export async function heartbeatPackTask(
  db: Db,
  request: HeartbeatRequest,
  now: number,
  how: HolderWriteHow = "splice",
  preread?: PackReads,
): Promise<StoredTask> {
  if (request.checkpoint !== undefined) {
    const error = storedJsonError(request.checkpoint, "checkpoint");
    if (error) throw error;
  }
  const done = await withRetries(async (round) => {
    const { reads: given, splices } = roundReads(round, preread);
    const { at, config } = await fencedSlotForWrite(db, request.id, request.leaseToken, now, given);
    const reads = splicesPack(at.pack, 1, how === "splice" && splices) ? [readSlot(at)] : null;
    const statements: SQL[] = [];
    if (cancelRequested(at)) {
      // As heartbeat.ts: the task ends cancelled (progress and checkpoint not stored), counted in the batch.
      statements.push(countersStatementSql(endCancelled(at, now, null), now)!);
    } else {
      keepLease(at, request.extendS, now);
      if (request.progress !== undefined) at.slot.body.p = request.progress;
      if (request.progressMessage !== undefined) at.slot.body.m = request.progressMessage;
      if (request.checkpoint !== undefined) at.slot.body.cp = request.checkpoint;
    }
    const write = holderPackWrites([at.pack], new Map(reads ? [[at.pack, reads]] : []), () => config, now);
    statements.unshift(...write.statements);
    if ((await commitGuarded(db, guardedBy(write.read, given), statements)) === null) return null;
    return storedSlot(at.pack, at.k);
  });
  if (done.state === "cancelled") throw new TaskCancelledError(done.id);
  return done;
}

/** assertLeaseHeld: the task when `leaseToken` holds its lease now; else throws as a fenced write would. */
export async function assertPackLeaseHeld(db: Db, id: string, leaseToken: string, now: number): Promise<StoredTask> {
  const at = await fencedSlot(db, id, leaseToken, now);
  return storedSlot(at.pack, at.k);
}

/** The task's slot when the fence holds, else throws `not_found` or `lease_lost` (ack.ts fenceMissError). */
async function fencedSlot(db: Db, id: string, token: string, now: number): Promise<Located> {
  return fenced((await locateTasks(db, [id])).get(id), id, token, now);
}

/** `fencedSlot` with its queue's config, read in the same call (locate.ts `locateForWrite`), or as `preread`. */
async function fencedSlotForWrite(db: Db, id: string, token: string, now: number, preread?: PackReads) {
  const { found, configs } = preread ?? (await locateForWrite(db, [id]));
  const at = fenced(found.get(id), id, token, now);
  return { at, config: configs.get(at.pack.queue)! };
}

function fenced(at: Located | undefined, id: string, token: string, now: number): Located {
  if (!at) throw new NotFoundError(`task ${id}`);
  if (!fenceHolds(at.slot, at.k, token, now)) throw new LeaseLostError(id);
  return at;
}
