import { sql, type SQL } from "drizzle-orm";
import { batchAll, type Db } from "../../db/client";
import { EdgeqError } from "../../contracts/errors";
import { CLAIM_WINDOW_S, MAX_BATCH } from "../../contracts/limits";
import { leasedTaskJson } from "../../contracts/task-view";
import type { StoredTask } from "../../contracts/stored-task";
import { countersStatementSql, type CounterEvent } from "../counters";
import type { LeasedAnswer, LeaseRequest } from "../lease";
import { getQueueConfig, type QueueConfig } from "../queue-config";
import { plainLeaseStatements, readPlainLease, TOKEN_HEX } from "./lease-sql";
import { commitGuarded, packWriteSql, withRetries } from "./pack-commit";
import { decodePack, PACK_COLUMNS, type LeaseEntry, type Pack, type PackRowRead } from "./pack-row";
import { isUnclaimed, leasableAt } from "./slot-rules";
import { loadSpill } from "./spill";
import { storedSlot } from "./stored-slot";

/**
 * How many pages of packs one lease reads at most. Every pack a lease reads has a slot leasable now (its
 * `next_at`, kept exact by every write: pack-row.ts `packFigures`), so the first page of `max` packs fills
 * the lease; the next pages are read only if a pack's `next_at` was early (never by the store's own writes) —
 * and they keep such a pack from taking the lease's budget (the prototype's stall, issue 32).
 */
const MAX_LEASE_PAGES = 4;

/**
 * The port's leaseTasks over packs: takes the queue's leasable slots in lease order (priority DESC, run_at,
 * id over `packs_live`, a pack's slots in order) until `max`, each under a fresh token of its own (the
 * port's rule: a token fences one task), with its counters in the same batch.
 *
 * Pending slots go first through the plain lease (lease-sql.ts): SQL that takes what is pending in the
 * rows as they are when its batch runs, so leasers racing for one pack never compute their write again.
 * Where that walk meets a pack with a slot of another kind leasable now (a retry or a release due, a lapsed
 * or unclaimed lease: the pack's `rare_at` has come), the rest of the lease is taken from there by
 * `leaseByRules`: the slots read and changed in JavaScript with the engine's rules (slot-rules.ts, as
 * redelivery.ts), committed by a guarded batch (pack-commit.ts). A retried task is leased in its pack's
 * position (docs/design/packs.md, "Priorities and run_at").
 */
export async function leasePackTasks(
  db: Db,
  request: LeaseRequest,
  now: number,
  readConfig?: QueueConfig,
  seen?: SeenPacks,
): Promise<StoredTask[]> {
  // A caller that read the queue's config in a batch of its own passes it (one round trip less).
  const config = readConfig ?? (await getQueueConfig(db, request.queue));
  const plan = packLeasePlan(db, request, now, config, undefined, seen);
  return plan.finish(await batchAll<unknown>(db, plan.statements));
}

/** Told the packs a lease's UPDATE wrote, as it returned them (the served store remembers them for the
 * holder's writes: hybrid/leased-packs.ts). */
export type SeenPacks = (rows: PackRowRead[]) => void;

/** A pack lease as statements to send (in a batch of the caller's, in this order) and what reads their
 * results into the leased tasks (taking the rest by the rules where the plain lease stopped at a rare slot). */
export interface PackLeasePlan {
  statements: SQL[];
  finish(results: unknown[]): Promise<StoredTask[]>;
}

/**
 * The pack lease of `request` under `config` as a plan: `guard`, when given, is a condition its statements
 * apply under (nothing is taken where it is false; the caller then knows not to `finish`).
 */
export function packLeasePlan(
  db: Db,
  request: LeaseRequest,
  now: number,
  config: QueueConfig,
  guard?: SQL,
  seen?: SeenPacks,
): PackLeasePlan {
  if (!Number.isInteger(request.max) || request.max < 1 || request.max > MAX_BATCH) {
    throw new EdgeqError("invalid_request", `max must be an integer from 1 to ${MAX_BATCH} (got ${request.max})`);
  }
  const vtS = request.visibilityTimeoutS ?? config.visibility_timeout_s;
  const expires = now + vtS * 1000;
  const tokens = newTokens(request.max);
  const statements = plainLeaseStatements({
    queue: request.queue,
    max: request.max,
    tokens,
    expires,
    claim: request.provisional ? Math.min(now + CLAIM_WINDOW_S * 1000, expires) : null,
    holder: request.holder ?? null,
    vtS,
    now,
    config,
    guard,
  });
  return {
    statements,
    async finish(results) {
      const plain = readPlainLease(results);
      seen?.(plain.rows);
      const mine = new Set(tokens);
      const taken = plain.packs.flatMap((pack) =>
        pack.slots.flatMap((slot, k) => (slot.st === "r" && slot.lease && mine.has(slot.lease.k) ? [{ pack, k }] : [])),
      );
      await loadSpill(db, plain.packs);
      const leased = taken.map(({ pack, k }) => storedSlot(pack, k));
      if (leased.length === request.max || !plain.rare) return leased;
      return [...leased, ...(await leaseByRules(db, { ...request, max: request.max - leased.length }, config, now))];
    },
  };
}

/** The lease by the engine's rules in JavaScript (any slot leasable now), read then written by a guarded
 * batch, computed again when another write came between (pack-commit.ts). */
async function leaseByRules(db: Db, request: LeaseRequest, config: QueueConfig, now: number): Promise<StoredTask[]> {
  return withRetries(async () => {
    const packs = await readLeasable(db, request.queue, request.max, now);
    const vtS = request.visibilityTimeoutS ?? config.visibility_timeout_s;
    const expires = now + vtS * 1000;
    const leased: Array<{ pack: Pack; k: number }> = [];
    const events: CounterEvent[] = [];
    const touched: Pack[] = [];
    for (const pack of packs) {
      if (leased.length >= request.max) break;
      // One token for the slots taken from this pack, each slot's its own with its slot characters (`s`).
      const entry: Omit<LeaseEntry, "x"> = {
        e: expires,
        c: request.provisional ? Math.min(now + CLAIM_WINDOW_S * 1000, expires) : null,
        h: request.holder,
        v: vtS,
        t: now,
        k: newToken(),
        s: 1,
      };
      let took = false;
      pack.slots.forEach((slot, k) => {
        if (leased.length >= request.max) return;
        const at = leasableAt(pack, slot, config);
        if (at === null || at > now) return;
        const base = { queue: pack.queue, type: pack.type };
        const first = slot.body.st === undefined;
        if (slot.st === "r" && !isUnclaimed(slot, now)) {
          // An expired lease taken over: its attempt ends as "lease expired", counted failed.
          (slot.body.er ??= []).push({
            attempt: slot.a,
            at: slot.lease!.e,
            message: "lease expired",
            kind: "lease_expired",
          });
          slot.a++;
          slot.lease = { ...entry, x: 1 };
          events.push({ ...base, counter: "failed" });
        } else {
          if (slot.st !== "r") slot.a++; // an unclaimed provisional lease is taken over with its attempt refunded
          slot.lease = { ...entry, x: 0 };
        }
        slot.st = "r";
        slot.body.st ??= now;
        slot.body.u = now;
        events.push({ ...base, counter: "leased", wait: first ? now - Math.max(pack.createdAt, at) : undefined });
        leased.push({ pack, k });
        took = true;
      });
      if (took) touched.push(pack);
    }
    if (leased.length === 0) return [];
    const counters = countersStatementSql(events, now);
    const statements = [...touched.flatMap((p) => packWriteSql(p, config, now)), ...(counters ? [counters] : [])];
    if ((await commitGuarded(db, { packs: touched }, statements)) === null) return null;
    return leased.map(({ pack, k }) => storedSlot(pack, k));
  });
}

/** The same lease answered as the API renders it (leaseAnswers): each task's LeasedTaskView as JSON text. */
export async function leasePackAnswers(
  db: Db,
  request: LeaseRequest,
  now: number,
  readConfig?: QueueConfig,
  seen?: SeenPacks,
): Promise<LeasedAnswer[]> {
  return (await leasePackTasks(db, request, now, readConfig, seen)).map(leasedAnswer);
}

/** A leased task as the API's lease answers it (`leaseAnswers`). */
export function leasedAnswer(t: StoredTask): LeasedAnswer {
  return {
    id: t.id,
    leaseToken: t.leaseToken!,
    type: t.type,
    createdAt: t.createdAt,
    startedAt: t.startedAt!,
    priority: t.priority,
    runAt: t.runAt,
    leaseTookOverExpired: t.leaseTookOverExpired ?? 0,
    uncounted: null,
    view: leasedTaskJson(t),
  };
}

/** The live packs of a queue whose next leasable time has come, in lease order: pages of `max` packs over the
 * live index, while the slots leasable now do not fill `max`. */
async function readLeasable(db: Db, queue: string, max: number, now: number): Promise<Pack[]> {
  const packs: Pack[] = [];
  let after: PackRowRead | undefined;
  for (let page = 0; page < MAX_LEASE_PAGES; page++) {
    const from = after
      ? sql`AND (priority < ${after.priority} OR (priority = ${after.priority} AND (run_at, id) > (${after.run_at}, ${after.id})))`
      : sql``;
    const rows = await db.all<PackRowRead & { next_at: number }>(sql`SELECT ${sql.raw(PACK_COLUMNS)} FROM packs
      WHERE queue = ${queue} AND finished_at IS NULL AND next_at <= ${now} ${from}
      ORDER BY priority DESC, run_at, id LIMIT ${max}`);
    const decoded = rows.map(decodePack);
    packs.push(...decoded);
    after = rows.at(-1);
    if (rows.length < max || packs.length >= max) break;
  }
  await loadSpill(db, packs);
  return packs;
}

/** Bytes of a lease token: 128 random bits, two hex characters each (lease-sql.ts `TOKEN_HEX`). */
const TOKEN_BYTES = TOKEN_HEX / 2;

/** Two hex characters per byte value. */
const HEX = Array.from({ length: 256 }, (_, x) => x.toString(16).padStart(2, "0"));

/** `count` lease tokens, each 128 random bits as lowercase hex (as the D1 store's `lower(hex(randomblob(16)))`),
 * from one call for random bytes (a call per token was most of a lease of 100's own JavaScript). */
function newTokens(count: number): string[] {
  const bytes = crypto.getRandomValues(new Uint8Array(count * TOKEN_BYTES));
  const tokens: string[] = [];
  for (let t = 0; t < count; t++) {
    let token = "";
    for (let b = t * TOKEN_BYTES; b < (t + 1) * TOKEN_BYTES; b++) token += HEX[bytes[b]!];
    tokens.push(token);
  }
  return tokens;
}

/** One lease token (the JavaScript lease's, one per pack it takes from). */
function newToken(): string {
  return newTokens(1)[0]!;
}
