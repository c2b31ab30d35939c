import { sql, type SQL } from "drizzle-orm";
import type { Db } from "../../db/client";
import { EdgeqError, LeaseLostError, NotFoundError, TaskCancelledError } from "../../contracts/errors";
import { countersStatementSql, type CounterEvent } from "../counters";
import type { AckKind, AckOutcome, AckScope, FencedItem, SettledDependent } from "../ack";
import { settledDependentsSql } from "../dependencies";
import type { QueueConfig } from "../queue-config";
import { locateForWrite, roundReads, type Located, type PackReads } from "./locate";
import { commitGuarded, withRetries, type ReadSet } from "./pack-commit";
import { holderPackWrites, readSlot, splicesPack, type SlotRead } from "./slot-splice";
import type { Pack } from "./pack-row";
import { packHasEdgesSql } from "./settle-dependents";
import { fenceHolds, isLive, slotRunAt, slotState, slotToken } from "./slot-rules";

/**
 * The holder's batch writes over packs (completeTasks, failTasks, releaseTasks, extendLeases), with the
 * D1 store's answers (src/engine/ack.ts `applyFencedUpdate`): each item on its own, in input order — a
 * repeated id `invalid_request` after its first, an unknown id (or one of another queue than `scope`'s)
 * `not_found`, a fence that fails `lease_lost`, and, for an ack whose own kind and token ended the lease, a
 * success with `repeated: true`. The changes of all items are written in one guarded batch, one row per pack
 * touched, with their counters.
 */

/** How a holder's write reaches its packs: its held slots spliced into each row at write time, computed
 * again whole when a splice's guard fails (slot-splice.ts); or whole from the start (the guarded path every
 * other pack write takes — kept for tests that hold the two equal and measure them against each other). */
export type HolderWriteHow = "splice" | "whole";

/** What one item does to its slot once the fence held: its counter events. */
export type ApplySlot = (at: Located, now: number, config: QueueConfig) => CounterEvent[];

/** Which write: an ack of `kind` (recognised when repeated), or a write that keeps the lease (extend). */
export interface HolderWrite {
  kind: AckKind | "extend";
  apply: ApplySlot;
}

export async function applyPackWrites(
  db: Db,
  items: FencedItem[],
  write: HolderWrite | ((item: number) => HolderWrite),
  now: number,
  scope: AckScope = {},
  how: HolderWriteHow = "splice",
  preread?: PackReads,
): Promise<AckOutcome[]> {
  const seen = new Set<string>();
  const duplicate = items.map((i) => (seen.has(i.id) ? true : (seen.add(i.id), false)));
  if (items.length === 0) return [];
  // One write for every item, or each item's own (an ack of several kinds in one batch: holder-writes.ts).
  const writeOf = typeof write === "function" ? write : () => write;
  return withRetries(async (round) => {
    // Round 0 may use what the caller read for it (the served store reads it to tell the layouts apart, or
    // remembers it: hybrid-store.ts); a later round reads again, as the guard found a change.
    const { reads: given, splices } = roundReads(round, preread);
    const { found, configs } =
      given ??
      (await locateForWrite(
        db,
        items.filter((_, k) => !duplicate[k]).map((i) => i.id),
      ));
    // Each item's answer first — a slot's fence as read (no item's write changes another's slot: an id names
    // one slot) — then the held slots' writes in input order, each pack's held slots counted first: a splice's
    // guard records them as read (`readSlot`), a pack written whole does not (slot-splice.ts `splicesPack`).
    const heldAt: Array<Located | undefined> = [];
    const heldOf = new Map<Pack, number>();
    const outcomes = items.map((item, k): AckOutcome | "changed" => {
      if (duplicate[k]) {
        const message = `task ${item.id} appears more than once; only its first item was applied`;
        return { id: item.id, ok: false, error: new EdgeqError("invalid_request", message) };
      }
      const at = found.get(item.id);
      if (!at || (scope.queue !== undefined && at.pack.queue !== scope.queue)) {
        const what = scope.queue === undefined ? `task ${item.id}` : `task ${item.id} in queue ${scope.queue}`;
        return { id: item.id, ok: false, error: new NotFoundError(what) };
      }
      if (fenceHolds(at.slot, at.k, item.leaseToken, now)) {
        heldAt[k] = at;
        heldOf.set(at.pack, (heldOf.get(at.pack) ?? 0) + 1);
        return "changed";
      }
      const lease = at.slot.lease;
      const kind = writeOf(k).kind;
      if (kind !== "extend" && lease?.w === kind && slotToken(lease, at.k) === item.leaseToken) {
        return okOutcome(item.id, at, writeOf(k), true);
      }
      return { id: item.id, ok: false, error: new LeaseLostError(item.id) };
    });
    const reads = new Map<Pack, SlotRead[]>();
    for (const [pack, held] of heldOf) if (splicesPack(pack, held, how === "splice" && splices)) reads.set(pack, []);
    const touched = new Set<Pack>();
    const events: CounterEvent[] = [];
    for (let k = 0; k < items.length; k++) {
      const at = heldAt[k];
      if (at === undefined) continue;
      reads.get(at.pack)?.push(readSlot(at));
      events.push(...writeOf(k).apply(at, now, configs.get(at.pack.queue)!));
      touched.add(at.pack);
    }
    const counters = countersStatementSql(events, now);
    // A completion's or a failure's report of the dependents it settled (released, or ended down a cascade),
    // read last in its batch as the D1 store's ack reads them (settledDependentsSql): the items it finished.
    const ended = items.filter(
      (item, k) => outcomes[k] === "changed" && !isLive(found.get(item.id)!.slot) && finishes(writeOf(k)),
    );
    const reportsDependents = ended.length > 0;
    const packs = holderPackWrites([...touched], reads, (p) => configs.get(p.queue)!, now);
    const statements = [
      ...packs.statements,
      ...(counters ? [counters] : []),
      ...(reportsDependents ? [settledDependentsSql(endedJson(ended, [...touched]), now)] : []),
    ];
    const rider = given?.remembered?.rider;
    const results = statements.length ? await commitGuarded(db, guardedBy(packs.read, given), statements, rider) : [];
    if (results === null) return null;
    const dependentsOf = reportsDependents ? settledByItem(results.at(-1) ?? []) : new Map();
    return outcomes.map((o, k) =>
      o === "changed" ? okOutcome(items[k]!.id, found.get(items[k]!.id)!, writeOf(k), false, dependentsOf) : o,
    );
  });
}

/** Whether a write ends its task's attempt for good where it ends it: a completion or a failure (its dependents
 * are settled and reported). */
const finishes = (write: HolderWrite) => write.kind === "complete" || write.kind === "fail";

/** A write's guard, with the conditions of the reads it was computed from where they were remembered. */
export function guardedBy(read: ReadSet, given: PackReads | undefined): ReadSet {
  const extra = given?.remembered?.conditions ?? [];
  return extra.length ? { ...read, conditions: [...(read.conditions ?? []), ...extra] } : read;
}

/** The items an ack finished, as settledDependentsSql reads them: none (nothing read) unless one of the
 * packs has a dependent (settle-dependents.ts `packHasEdgesSql`). */
function endedJson(ended: FencedItem[], packs: Pack[]): SQL {
  return sql`(CASE WHEN ${packHasEdgesSql(packs)} THEN ${JSON.stringify(ended.map((i) => ({ id: i.id })))}
    ELSE '[]' END)`;
}

/** The dependents a batch's last read (settledDependentsSql) reported, by the item whose finish reached them,
 * each once (released by several items of the ack: reported under the first), as src/engine/ack.ts. */
function settledByItem(rows: unknown[]): Map<string, SettledDependent[]> {
  const seen = new Set<string>();
  const byItem = new Map<string, SettledDependent[]>();
  for (const d of rows as Array<SettledDependent & { by_id: string }>) {
    if (seen.has(d.id)) continue;
    seen.add(d.id);
    const list = byItem.get(d.by_id) ?? [];
    list.push({ id: d.id, queue: d.queue, state: d.state, run_at: d.run_at, ...(d.remote ? { remote: true } : {}) });
    byItem.set(d.by_id, list);
  }
  return byItem;
}

/** An item's success, from its slot as it now is (with the dependents its finish settled, for an ack). */
function okOutcome(
  id: string,
  at: Located,
  write: HolderWrite,
  repeated: boolean,
  dependentsOf: Map<string, SettledDependent[]> = new Map(),
): AckOutcome {
  const state = slotState(at.slot);
  if (state === "cancelled") return { id, ok: false, error: new TaskCancelledError(id) };
  return {
    id,
    ok: true,
    queue: at.pack.queue,
    state,
    run_at: slotRunAt(at.pack, at.slot),
    children: [],
    ...(finishes(write) ? { dependents: dependentsOf.get(id) ?? [] } : {}),
    repeated,
    lease_expires_at: state === "processing" ? at.slot.lease!.e : null,
  };
}

/**
 * Ends, cancelled, a slot whose cancel was requested (operator-writes.ts), when its holder's fenced write
 * reaches it — as the D1 store's CASE on `cancel_requested` in each holder write: finished now, the lease
 * ended (by `kind`, so a repeat of that ack answers `task_cancelled` again; by a kept lease — extend,
 * heartbeat — unmarked, so a later write is `lease_lost`), counted cancelled. What the write carried (a
 * result, a longer lease) is not applied; a failure's error is still recorded (fail.ts).
 */
export function endCancelled(at: Located, now: number, kind: AckKind | null): CounterEvent[] {
  at.slot.st = "x";
  at.slot.body.f = now;
  if (kind === null) {
    at.slot.lease = { ...at.slot.lease!, c: null, f: now };
    at.slot.body.u = now;
  } else endLease(at, kind, now);
  return [{ queue: at.pack.queue, type: at.pack.type, counter: "cancelled" }];
}

/** A fenced slot whose cancel was requested: its holder's write ends it cancelled. */
export const cancelRequested = (at: Located) => at.slot.body.cr === 1;

/** Ends a slot's lease by `kind`: a copy of its entry marked with the ack and when (a repeat is recognised by
 * it; the slot's neighbours keep theirs). */
export function endLease(at: Located, kind: AckKind, now: number): void {
  at.slot.lease = { ...at.slot.lease!, c: null, w: kind, f: now };
  at.slot.body.u = now;
}
