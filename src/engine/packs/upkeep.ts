import { sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { MAX_ROWS_PER_TICK_STATEMENT } from "../../contracts/limits";
import { countersStatementSql, outcomeEvents, type CounterEvent } from "../counters";
import { getQueueConfig, type QueueConfig } from "../queue-config";
import type { ReapResult } from "../reap";
import { packOf } from "./pack-ids";
import { commitGuarded, packWriteSql, readPacks, withRetries } from "./pack-commit";
import { slotId, type LeaseEntry, type Pack, type Slot } from "./pack-row";
import { expiryBackoffMs, slotRunAt, slotState } from "./slot-rules";

/**
 * The reaper over packs (the port's `reapLapsedLeases` / `reapExpiredLeases`, src/engine/store-upkeep.ts),
 * with the D1 store's answers, counters and error entries (src/engine/reap.ts): a lapsed lease of a slot is
 * - an unclaimed provisional lease, expired: pending again at its run time, attempt refunded, nothing
 *   recorded (cancelled when a cancel was requested);
 * - a claimed lease, expired: `lease expired` recorded (at the expiry), then pending after the expiry
 *   backoff (no jitter: the lease's takeover computes the same, slot-rules.ts `leasableAt`), or dead when
 *   the attempt was the last (cancelled when a cancel was requested).
 * Each lapse is re-checked on the pack as read, and written in a guarded batch (pack-commit.ts): a slot
 * taken over, acked or reaped since it was found is left alone, and none is reaped twice.
 */

/**
 * Most packs one reap batch rewrites. 100: what one full lease's batch rewrites (MAX_BATCH slots, one per
 * pack at worst), so a reap batch is never larger than the writes the store already makes; a call with more
 * packs commits them 100 at a time (each slot's reap is atomic on its own, as the D1 store's per-row UPDATE).
 */
export const REAP_PACKS_PER_BATCH = 100;

/**
 * Most entries of the live index (`packs_live`) one `reapExpiredLeases` walks per call: the bound of every
 * tick statement (MAX_ROWS_PER_TICK_STATEMENT), a few milliseconds of D1. The walk goes on from where the
 * last call stopped (`sweep_cursors`), and wraps round within the call, so every live pack is looked at
 * within one walk of the live packs — each call when there are fewer than this.
 */
export const REAP_WALK_PACKS = MAX_ROWS_PER_TICK_STATEMENT;

/** The walk's cursor in `sweep_cursors`: the last live-index entry read, as JSON [queue, priority, run_at, id]. */
const REAP_CURSOR = "pack_reap";

/** A slot to reap: its pack and index, and the task id it was asked by (null: found by the walk). */
interface Target {
  pack: string;
  slot: number;
  id: string | null;
}

/** The lease of a slot when it has lapsed at `now`, and how: "unclaimed" (refunded) or "expired" (counted). */
function lapse(slot: Slot, now: number): "unclaimed" | "expired" | null {
  if (slot.st !== "r" || slot.lease === null || slot.lease.e > now) return null;
  return slot.lease.c !== null ? "unclaimed" : "expired";
}

/**
 * reapLapsedLeases: reaps those of `ids` whose lease has lapsed at `now` (at most MAX_ROWS_PER_TICK_STATEMENT
 * ids, as the D1 store), reading only their packs.
 *
 * @example
 * const { reaped } = await reapPackLapsedLeases(db, lapsedIds, Date.now());
 */
export async function reapPackLapsedLeases(db: Db, ids: string[], now: number): Promise<ReapResult> {
  if (ids.length === 0) return { reaped: [], unclaimed: [] };
  if (ids.length > MAX_ROWS_PER_TICK_STATEMENT) {
    throw new Error(`reapLapsedLeases: at most ${MAX_ROWS_PER_TICK_STATEMENT} ids per call (got ${ids.length})`);
  }
  const clientRows = await db.all<{ id: string; pack: string; slot: number }>(
    sql`SELECT id, pack, slot FROM pack_ids WHERE id IN (SELECT value FROM json_each(${JSON.stringify(ids)}))`,
  );
  const byClientId = new Map(clientRows.map((r) => [r.id, r]));
  const targets: Target[] = [];
  for (const id of new Set(ids)) {
    const place = byClientId.get(id) ?? packOf(id);
    if (place) targets.push({ pack: place.pack, slot: place.slot, id });
  }
  return reapTargets(db, targets, now);
}

/**
 * reapExpiredLeases: walks up to REAP_WALK_PACKS entries of the live index from the last call's cursor,
 * reading the state and lease columns of the packs with a processing slot only, and reaps up to `limit` of
 * the lapsed leases found.
 *
 * @example
 * const { reaped } = await reapPackExpiredLeases(db, Date.now());
 */
export async function reapPackExpiredLeases(
  db: Db,
  now: number,
  limit = MAX_ROWS_PER_TICK_STATEMENT,
): Promise<ReapResult> {
  const targets = await findLapsed(db, now, Math.min(limit, MAX_ROWS_PER_TICK_STATEMENT));
  return reapTargets(db, targets, now);
}

/** A live-index entry as the walk reads it: its key, its state columns, and its leases when any is held. */
interface Walked {
  queue: string;
  priority: number;
  run_at: number;
  id: string;
  st: string;
  lk: string;
  leases: string | null;
}

/** The lapsed slots of up to REAP_WALK_PACKS live packs from the cursor (wrapping round once), at most
 * `limit`; the cursor moves past the packs whose lapsed slots were all taken. */
async function findLapsed(db: Db, now: number, limit: number): Promise<Target[]> {
  const stored = await db.get<{ position: string }>(
    sql`SELECT position FROM sweep_cursors WHERE name = ${REAP_CURSOR}`,
  );
  const start = stored?.position ? (JSON.parse(stored.position) as [string, number, number, string]) : null;
  const targets: Target[] = [];
  let cursor = start;
  let read = 0;
  // From the cursor to the end of the index, then (wrapping round) from its beginning up to the cursor.
  const passes = start ? [sql`AND ${pastSql(start)}`, sql`AND NOT ${pastSql(start)}`] : [sql``];
  for (const after of passes) {
    const rows = await db.all<Walked>(sql`SELECT queue, priority, run_at, id, st, lk,
        CASE WHEN instr(st, 'r') > 0 THEN json(leases) END AS leases
      FROM packs WHERE finished_at IS NULL ${after}
      ORDER BY queue, priority DESC, run_at, id LIMIT ${REAP_WALK_PACKS - read}`);
    read += rows.length;
    for (const row of rows) {
      const lapsed = row.leases === null ? [] : lapsedSlots(row, now);
      if (targets.length + lapsed.length > limit) {
        targets.push(...lapsed.slice(0, limit - targets.length));
        return saveCursor(db, stored?.position, cursor, targets);
      }
      targets.push(...lapsed);
      cursor = [row.queue, row.priority, row.run_at, row.id];
    }
    if (read >= REAP_WALK_PACKS) return saveCursor(db, stored?.position, cursor, targets);
    cursor = null; // reached the end of the index: the next walk starts from its beginning
  }
  return saveCursor(db, stored?.position, cursor, targets);
}

/** A live-index entry after `key` in the index's order (queue, priority DESC, run_at, id). */
function pastSql(key: [string, number, number, string]) {
  const [queue, priority, runAt, id] = key;
  return sql`(queue > ${queue} OR (queue = ${queue} AND (priority < ${priority}
    OR (priority = ${priority} AND (run_at, id) > (${runAt}, ${id})))))`;
}

/** Slots of a walked pack whose lease lapsed at `now`, from its fixed-width columns and lease list. */
function lapsedSlots(row: Walked, now: number): Target[] {
  const leases = JSON.parse(row.leases!) as LeaseEntry[];
  const found: Target[] = [];
  for (let k = 0; k < row.st.length; k++) {
    if (row.st[k] !== "r" || row.lk[k] === " ") continue;
    const lease = leases[row.lk.charCodeAt(k) - 48]!;
    if (lease.e <= now) found.push({ pack: row.id, slot: k, id: null });
  }
  return found;
}

async function saveCursor(
  db: Db,
  was: string | undefined,
  cursor: [string, number, number, string] | null,
  targets: Target[],
): Promise<Target[]> {
  const position = cursor ? JSON.stringify(cursor) : "";
  if (position !== (was ?? "")) {
    await db.run(sql`INSERT INTO sweep_cursors (name, position) VALUES (${REAP_CURSOR}, ${position})
      ON CONFLICT (name) DO UPDATE SET position = excluded.position`);
  }
  return targets;
}

/** Reaps the lapsed ones among `targets`, REAP_PACKS_PER_BATCH packs per guarded batch; refunded first, then
 * expired, as the D1 store answers. */
async function reapTargets(db: Db, targets: Target[], now: number): Promise<ReapResult> {
  const byPack = new Map<string, Target[]>();
  for (const t of targets) byPack.set(t.pack, [...(byPack.get(t.pack) ?? []), t]);
  const packIds = [...byPack.keys()];
  const refunded: ReapResult["reaped"] = [];
  const expired: ReapResult["reaped"] = [];
  const configs = new Map<string, QueueConfig>();
  for (let i = 0; i < packIds.length; i += REAP_PACKS_PER_BATCH) {
    const chunk = packIds.slice(i, i + REAP_PACKS_PER_BATCH);
    const done = await withRetries(async () => {
      const packs = await readPacks(db, chunk);
      const out = { refunded: [] as ReapResult["reaped"], expired: [] as ReapResult["reaped"] };
      const events: CounterEvent[] = [];
      const touched: Pack[] = [];
      for (const pack of packs.values()) {
        if (!configs.has(pack.queue)) configs.set(pack.queue, await getQueueConfig(db, pack.queue));
        const config = configs.get(pack.queue)!;
        let changed = false;
        for (const t of byPack.get(pack.id)!) {
          const slot = pack.slots[t.slot];
          if (!slot || (t.id !== null && slotId(pack, t.slot) !== t.id)) continue;
          const how = lapse(slot, now);
          if (how === null) continue;
          if (how === "unclaimed") refund(slot, pack, now);
          else expire(slot, pack, config, now);
          const task = { queue: pack.queue, type: pack.type, state: slotState(slot), started_at: slot.body.st ?? null };
          events.push(...outcomeEvents(task, now, how === "expired"));
          const reaped = {
            id: slotId(pack, t.slot),
            queue: pack.queue,
            state: task.state,
            run_at: slotRunAt(pack, slot),
          };
          (how === "unclaimed" ? out.refunded : out.expired).push(reaped);
          changed = true;
        }
        if (changed) touched.push(pack);
      }
      if (touched.length === 0) return out;
      const counters = countersStatementSql(events, now);
      const statements = [
        ...touched.flatMap((p) => packWriteSql(p, configs.get(p.queue)!, now)),
        ...(counters ? [counters] : []),
      ];
      return (await commitGuarded(db, { packs: touched }, statements)) === null ? null : out;
    });
    refunded.push(...done.refunded);
    expired.push(...done.expired);
  }
  return { reaped: [...refunded, ...expired], unclaimed: refunded.map((r) => r.id) };
}

/** Ends the slot's lease (its entry kept for the holder's name, no longer held: the slot is not processing). */
function endLapsed(slot: Slot, now: number): void {
  slot.lease = { ...slot.lease!, c: null, f: now };
  slot.body.u = now;
}

/** An unclaimed provisional lease, expired: pending at its run time, attempt refunded (cancelled if asked). */
function refund(slot: Slot, pack: Pack, now: number): void {
  const runAt = slotRunAt(pack, slot);
  endLapsed(slot, now);
  slot.a = Math.max(slot.a - 1, 0);
  if (slot.body.cr === 1) {
    slot.st = "x";
    slot.body.f = now;
  } else {
    slot.st = "w";
    slot.body.t = runAt;
  }
}

/** A claimed lease, expired: `lease expired` recorded; pending after the expiry backoff, or dead when it was
 * the last attempt (cancelled if asked) — as retry-policy.ts `failureSetSql` with the expiry's backoff. */
function expire(slot: Slot, pack: Pack, config: QueueConfig, now: number): void {
  const expiredAt = slot.lease!.e;
  (slot.body.er ??= []).push({ attempt: slot.a, at: expiredAt, message: "lease expired", kind: "lease_expired" });
  endLapsed(slot, now);
  if (slot.body.cr === 1) {
    slot.st = "x";
    slot.body.f = now;
  } else if (slot.a >= pack.maxAttempts) {
    slot.st = "d";
    slot.body.f = now;
  } else {
    slot.st = "w";
    slot.body.t = expiredAt + expiryBackoffMs(slot.a, config);
  }
}
