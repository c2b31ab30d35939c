import { sql, type SQL } from "drizzle-orm";
import { batchAll, type Db } from "../../db/client";
import { MAX_PRIORITY } from "../../contracts/limits";
import { QUEUE_ROW_KEY } from "../flow-lease";
import { finishRowLease, rowLeaseSql, type CountedLease, type LeaseRequest, type RowLeaseShape } from "../lease";
import {
  configFingerprintOf,
  configFingerprintSql,
  queueConfigOf,
  queueConfigSql,
  type QueueConfig,
} from "../queue-config";
import { leasableSql } from "../redelivery";
import { packsFirstHint, rememberPacksFirst } from "./packs-first-hint";
import { leaseUnderQueueRate } from "./queue-rate";

/** Where a queue's lease order starts in each layout, as the first statement of a lease's batch reads it. */
interface FrontsRow {
  /** The queue is paused as a whole (flow control: src/engine/flow-control.ts). */
  paused: number | null;
  /** `[priority, run_at]` of the first due pack, as JSON. */
  packs: string | null;
  /** `[priority, run_at]` of the first leasable row, as JSON; read only where there is a due pack. */
  rows: string | null;
  /** 1 when the packs are leased first (a due pack, not paused, whose front comes first or ties). */
  packs_first: number;
}

/**
 * Both layouts' fronts in one statement, each the first entry of its live index (`tasks_live`, `packs_live`)
 * that is leasable now: a row the row store's lease would pick (pending with its run_at come, or a lapsed or
 * unclaimed lease due: src/engine/redelivery.ts), a pack whose next leasable slot's time has come (`next_at`
 * counts a lapsed lease, a retry's time and pending slots alike). Reads the entries ahead of each front (in
 * flight, or held packs), as the lease's own walk does. The rows' front is read only where a due pack is
 * (CASE evaluates its branches lazily): a queue without packs pays two index probes (flow_keys, packs).
 */
function frontsSql(queue: string, now: number): SQL {
  return sql`WITH f AS MATERIALIZED (
      SELECT paused, packs, CASE WHEN paused IS NOT 1 AND packs IS NOT NULL THEN ${rowsFrontSql(queue, now)} END AS rows
      FROM (SELECT
        (SELECT paused FROM flow_keys WHERE queue = ${queue} AND key = ${QUEUE_ROW_KEY}) AS paused,
        (SELECT json_array(priority, run_at) FROM packs
          WHERE queue = ${queue} AND finished_at IS NULL AND next_at <= ${now}
          ORDER BY priority DESC, run_at, id LIMIT 1) AS packs))
    SELECT paused, packs, rows,
      CASE WHEN paused IS 1 OR packs IS NULL THEN 0 WHEN rows IS NULL THEN 1
        WHEN packs->>0 > rows->>0 OR (packs->>0 = rows->>0 AND packs->>1 <= rows->>1) THEN 1 ELSE 0 END AS packs_first
    FROM f`;
}

/** `[priority, run_at]` of the first row the row store's lease would pick, as JSON, or NULL: a scalar subquery. */
function rowsFrontSql(queue: string, now: number): SQL {
  return sql`(SELECT json_array(priority, run_at) FROM tasks
      WHERE queue = ${queue} AND finished_at IS NULL AND priority >= ${-MAX_PRIORITY} AND run_at <= ${now}
        AND ${leasableSql(now)}
      ORDER BY priority DESC, run_at, id LIMIT 1)`;
}

/** How one kind of lease is taken of each layout (tasks, or answers as the API renders them). */
export interface LeaseSides<T> {
  /** The row store's lease statements' shape (src/engine/lease.ts). */
  rows: RowLeaseShape<T>;
  /** The pack store's lease, with the queue's config read in the first batch. */
  packs: (request: LeaseRequest, config: QueueConfig) => Promise<T[]>;
  /** The same as statements for the first batch, applied only where `guard` holds (src/engine/packs/lease.ts
   * `packLeasePlan`), and what reads their results. */
  packsPlan: (
    request: LeaseRequest,
    config: QueueConfig,
    guard: SQL,
  ) => { statements: SQL[]; finish(results: unknown[]): Promise<T[]> };
}

/**
 * One lease over both layouts: the layout whose front comes first in lease order (priority DESC, run_at) is
 * leased first, up to `max`, and the other only for what it left — so a lease takes a queue's tasks in lease
 * order across the layouts up to one step: within one call, the second layout's tasks come after the first's
 * even where they interleave (a lease of 100 over a pack of priority 5 and rows of priority 5 and 4 takes the
 * pack's first, then the rows'); on a tie of the fronts the packs go first. Each layout's lease is atomic on
 * its own, and no task is in both, so no task is leased twice; a call is two atomic steps, not one.
 *
 * Round trips: the first call is ONE batch — the fronts (`frontsSql`), the queue's config, and the row store's
 * lease guarded by "the packs do not come first" (read inside each of its statements, in the batch's one
 * transaction, so it agrees with the fronts read just before). A queue without due packs is leased in that
 * one call, as the row store's own lease is. Where the packs come first, the batch leased nothing and the
 * pack store's lease (one batch, with the config read) goes next; the rows are asked for what the packs left
 * only if the fronts saw a leasable row. Where the last lease of the queue in this isolate found its packs
 * first (packs-first-hint.ts), the first batch also carries the pack lease, built with that lease's config and
 * guarded by "the packs come first and the config is that one": a queue of packs is then leased in one call
 * too. (docs/design/packs.md, "Round trips of the served store".)
 *
 * A queue paused as a whole leases nothing from its packs (its rows: flow control's lease, which refuses
 * them). Pack tasks are never on a queue that had flow control when they were enqueued (route-enqueue.ts);
 * those of a queue that got it later are its unkeyed tasks, so no key's limits apply to them, and they are
 * leased within the queue's rate (queue-rate.ts: the tokens of the bucket flow control's lease takes from).
 *
 * @example
 * const tasks = await leaseBoth(db, request, now, { rows: AS_TASKS, packs: (r, c) => leasePackTasks(db, r, now, c) });
 */
export async function leaseBoth<T extends CountedLease>(
  db: Db,
  request: LeaseRequest,
  now: number,
  sides: LeaseSides<T>,
): Promise<T[]> {
  const hinted = hintedLease(db, request, now, sides);
  const taken = hinted && (await runLease(db, hinted));
  if (taken) return taken;
  return (await runLease(db, unhintedLease(db, request, now, sides)))!;
}

/** A riding lease sent as a batch of its own. */
async function runLease<T>(db: Db, lease: RidingLease<T>): Promise<T[] | null> {
  return lease.finish(await batchAll<unknown>(db, lease.statements));
}

/**
 * `leaseBoth`'s first batch without a hint, as statements that may ride another batch (an ack carrying the next
 * lease: hybrid-store.ts `ackThenLease`), and what reads their results: the fronts, the config and the row
 * store's lease guarded by "the packs do not come first"; where the packs come first, `finish` leases them (and
 * the rows after) in calls of their own. Never null: it takes what `leaseBoth` would.
 */
export function unhintedLease<T extends CountedLease>(
  db: Db,
  request: LeaseRequest,
  now: number,
  sides: LeaseSides<T>,
): RidingLease<T> {
  const packsComeNotFirst = sql`${packsFirstSql(request.queue, now)} = 0`;
  return {
    statements: [
      ...leaseReadsSql(request.queue, now),
      ...rowLeaseSql(request, now, sides.rows.returning, packsComeNotFirst),
    ],
    finish: async ([fronts, configRows, ...rowLease]) => {
      const { front, config, fp } = readLeaseReads(fronts, configRows);
      remember(request.queue, front, config, fp);
      // A rated queue's packs are leased within its rate; any other queue's as the pack store leases them.
      const packsOn = (req: LeaseRequest): Promise<T[]> =>
        config.flow?.rate ? leaseUnderQueueRate(db, req, now, (r) => sides.packs(r, config)) : sides.packs(req, config);
      if (front.packs_first !== 1) {
        // The rows were leased in the batch; a paused queue's packs are left alone.
        const taken = await finishRowLease(db, request, now, sides.rows, rowLease, packsComeNotFirst);
        if (front.packs === null || front.paused === 1 || taken.length >= request.max) return taken;
        return [...taken, ...(await packsOn({ ...request, max: request.max - taken.length }))];
      }
      return withRowsAfter(db, request, now, sides, front, await packsOn(request));
    },
  };
}

/** The packs' part of a lease was `taken`: the rows are asked for what it left, where the fronts saw a row. */
async function withRowsAfter<T extends CountedLease>(
  db: Db,
  request: LeaseRequest,
  now: number,
  sides: LeaseSides<T>,
  front: FrontsRow,
  taken: T[],
): Promise<T[]> {
  if (taken.length >= request.max || front.rows === null) return taken;
  const rest = { ...request, max: request.max - taken.length };
  const more = await finishRowLease(
    db,
    rest,
    now,
    sides.rows,
    await batchAll<unknown>(db, rowLeaseSql(rest, now, sides.rows.returning)),
  );
  return [...taken, ...more];
}

/** A lease as statements that may ride another batch, and what reads their results: null when it took
 * nothing because its guard did not hold (the caller then leases as without them). */
export interface RidingLease<T> {
  statements: SQL[];
  finish(results: unknown[][]): Promise<T[] | null>;
}

/**
 * The lease of a queue whose last lease here found its packs first (packs-first-hint.ts), as statements: ONE
 * batch of the fronts, the config and the pack lease built with the hint's config, which applies only where the
 * packs come first and the config is still that one (read in its statements, in the batch's transaction). No row
 * statement goes in that batch: two guarded leases in one batch would each see the other's writes. `finish`
 * answers null when the guard did not hold (nothing was taken): the caller leases as without a hint. A queue
 * with nothing to lease in either layout (no due pack, no leasable row: the batch probes the rows' front too) and
 * no flow control answers none at once and keeps its hint — the next lease, after an enqueue of packs, is one
 * call. Null when the queue has no hint here. Sent alone (`leaseBoth`) or after a caller's own statements in
 * its batch (an ack carrying the next lease: hybrid-store.ts `ackThenLease`), reading the queue as they left it.
 */
export function hintedLease<T extends CountedLease>(
  db: Db,
  request: LeaseRequest,
  now: number,
  sides: LeaseSides<T>,
): RidingLease<T> | null {
  const hint = packsFirstHint(request.queue);
  if (!hint) return null;
  const fingerprint = configFingerprintSql(request.queue);
  const guard = sql`${packsFirstSql(request.queue, now)} = 1 AND ${fingerprint} = ${hint.fp}`;
  const plan = sides.packsPlan(request, hint.config, guard);
  return {
    statements: [
      ...leaseReadsSql(request.queue, now),
      sql`SELECT ${rowsFrontSql(request.queue, now)} AS rows`,
      ...plan.statements,
    ],
    finish: async ([fronts, configRows, rowsFront, ...results]) => {
      const { front, config, fp } = readLeaseReads(fronts, configRows);
      const empty = front.packs === null && (rowsFront as Array<{ rows: string | null }>)[0]!.rows === null;
      if (empty && config.flow === null && fp === hint.fp) return [];
      remember(request.queue, front, config, fp);
      if (front.packs_first !== 1 || fp !== hint.fp) return null;
      return withRowsAfter(db, request, now, sides, front, await plan.finish(results));
    },
  };
}

/** The first statements of a lease's batch: both layouts' fronts, and the queue's config with its fingerprint. */
function leaseReadsSql(queue: string, now: number): SQL[] {
  return [frontsSql(queue, now), queueConfigSql(queue)];
}

/** What `leaseReadsSql` read. */
function readLeaseReads(fronts: unknown, configRows: unknown) {
  const rows = configRows as unknown[];
  return { front: (fronts as FrontsRow[])[0]!, config: queueConfigOf(rows), fp: configFingerprintOf(rows) };
}

/** Whether the packs come first (1) or not (0), as `frontsSql` reads it: a condition for a batch's statements. */
function packsFirstSql(queue: string, now: number): SQL {
  return sql`coalesce((SELECT packs_first FROM (${frontsSql(queue, now)})), 0)`;
}

/** Records what a lease's fronts found for the next lease here (a rated queue's packs are leased under its rate,
 * in calls of their own: never hinted). */
function remember(queue: string, front: FrontsRow, config: QueueConfig, fp: string): void {
  rememberPacksFirst(queue, front.packs_first === 1 && !config.flow?.rate ? { config, fp } : null);
}
