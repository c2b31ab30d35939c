import { sql, type SQL } from "drizzle-orm";
import { batchAll, type Db } from "../db/client";
import { recordCounters, type CounterEvent } from "./counters";
import { appendUncountedSql, counterEventSql } from "./counters-in-row";
import { EdgeqError } from "../contracts/errors";
import { CLAIM_WINDOW_S, MAX_BATCH, MAX_PRIORITY } from "../contracts/limits";
import { flowAppliesSql, flowLeaseSql } from "./flow-lease";
import { flowTokenTimesSql } from "./flow-control";
import { DEFAULT_QUEUE_CONFIG } from "./queue-config";
import { leasableAtSql, leasableSql, unclaimedSql } from "./redelivery";
import type { StoredTask } from "../contracts/stored-task";
import { leaseOrder, type LeaseOrdered } from "../contracts/lease-order";
import { leasedViewJsonSql, rowFromRaw } from "./task-row";

export interface LeaseRequest {
  queue: string;
  /** 1..MAX_BATCH tasks. */
  max: number;
  /** The lease length; null: the queue's configured visibility timeout, read inside the lease statement
   * (one D1 query per lease instead of two: each is a network hop on Cloudflare). */
  visibilityTimeoutS: number | null;
  /** Who holds the lease (for inspection). */
  holder: string | null;
  /** The lease is provisional: leasable again unless claimed within CLAIM_WINDOW_S (a long poll answered
   * after it waited, whose client may have hung up unseen); its holder keeps it until another lease takes it
   * over. Default false. */
  provisional?: boolean;
}

/**
 * Leases up to `max` leasable tasks of a queue in one statement: a CTE picks them in priority order
 * (higher first), then run_at, then id, and the UPDATE marks them processing, counts the attempt, and
 * gives each a fresh random lease token and an expiry `now + visibility timeout`; the lease's length is
 * kept on the row (`lease_visibility_s`), the default of a heartbeat or extend that names none.
 *
 * Leasable (src/engine/redelivery.ts) includes processing tasks whose lease ran out: an expired lease is
 * taken over as soon as its backoff is due (the attempt it used is recorded as "lease expired" and counted
 * as failed, as the reaper would have), and a
 * provisional lease nobody claimed is taken over at once with its attempt refunded — no cron tick needed.
 *
 * Why it is safe under concurrency: D1 runs one statement at a time per database, and the UPDATE
 * re-checks leasability, so two leasers can never both take a task, and the old holder's token is
 * replaced, so its late writes are refused.
 * Why it is cheap: the pick walks the `tasks_live` index (queue, priority DESC, run_at, id), so it reads
 * live tasks only, never finished ones; the update writes one row per task (no indexed column changes).
 *
 * @example
 * const leased = await leaseTasks(db, { queue: "emails", max: 10, visibilityTimeoutS: 30, holder: "w1" }, Date.now());
 */
export async function leaseTasks(db: Db, request: LeaseRequest, now: number): Promise<StoredTask[]> {
  return leaseAs(db, request, now, AS_TASKS);
}

/** A task as a lease answer carries it: what the engine orders and counts it by, its token, its API view. */
export interface LeasedAnswer {
  id: string;
  leaseToken: string;
  type: string;
  createdAt: number;
  startedAt: number;
  priority: number;
  runAt: number;
  /** 1 when this lease took the task over from an expired lease (that attempt counts as failed). */
  leaseTookOverExpired: number;
  /** Non-null when the task's row keeps its counter events (this lease's among them): not counted again. */
  uncounted: string | null;
  /** The task's LeasedTaskView as JSON text, rendered by SQLite inside the lease statement. */
  view: string;
}

/**
 * The same lease as `leaseTasks` (the same statement, the same guarantees), answered as the API renders it:
 * each task's view is built by SQLite in the statement's RETURNING (`leasedViewJsonSql`), so the Worker
 * neither converts ~25 columns per task into an object nor renders their times and JSON again. This is
 * the HTTP lease's path (src/http/routes/queues.ts), where that conversion and rendering were the
 * largest module of the Worker's CPU profile in a burn-down (task-row.ts, 17.9 %, bench run of
 * 2026-11-23T02:56:40Z, docs/benchmarks.md section 3b). Callers that work with the task itself (push
 * processors, the SQS endpoint, long polls) use `leaseTasks`.
 *
 * @example
 * const answers = await leaseAnswers(db, { queue: "emails", max: 100, visibilityTimeoutS: 30, holder: "w1" }, Date.now());
 * const body = `{"tasks":[${answers.map((t) => t.view).join(",")}]}`;
 */
export async function leaseAnswers(db: Db, request: LeaseRequest, now: number): Promise<LeasedAnswer[]> {
  return leaseAs(db, request, now, AS_ANSWERS);
}

/** What a lease answers with: the columns its UPDATE returns, and each returned row read as an answer. */
export interface RowLeaseShape<T> {
  returning: SQL;
  read(row: Record<string, unknown>): T;
}

/** A lease answered as tasks (leaseTasks). */
export const AS_TASKS: RowLeaseShape<StoredTask> = { returning: sql`*`, read: rowFromRaw };

/** A lease answered as the API renders it (leaseAnswers). */
export const AS_ANSWERS: RowLeaseShape<LeasedAnswer> = {
  returning: sql`id, lease_token, type, priority, run_at, created_at, started_at, lease_took_over_expired,
        CASE WHEN uncounted IS NULL THEN NULL ELSE '' END AS uncounted, ${leasedViewJsonSql} AS view`,
  read: (raw) => {
    const r = raw as unknown as LeasedAnswerRow;
    return {
      id: r.id,
      leaseToken: r.lease_token,
      type: r.type,
      priority: r.priority,
      runAt: r.run_at,
      createdAt: r.created_at,
      startedAt: r.started_at,
      leaseTookOverExpired: r.lease_took_over_expired,
      uncounted: r.uncounted,
      view: r.view,
    };
  },
};

async function leaseAs<T extends CountedLease>(
  db: Db,
  request: LeaseRequest,
  now: number,
  shape: RowLeaseShape<T>,
): Promise<T[]> {
  return finishRowLease(db, request, now, shape, await batchAll(db, rowLeaseSql(request, now, shape.returning)));
}

/**
 * A lease's answer from the results of its first batch (`rowLeaseSql`'s statements, maybe after other
 * statements of the caller's), with flow control's lease run where that batch read that it applies (the same
 * `guard`): the tasks in lease order, counted.
 */
export async function finishRowLease<T extends CountedLease>(
  db: Db,
  request: LeaseRequest,
  now: number,
  shape: RowLeaseShape<T>,
  results: unknown[][],
  guard: SQL = sql`1`,
): Promise<T[]> {
  const [plain, flowOn] = results as Array<Array<Record<string, unknown>>>;
  let flow: Array<Record<string, unknown>> = [];
  if (Number(flowOn![0]?.flow) === 1) {
    const statements = flowLeaseSql(
      request,
      now,
      (picked) => leaseUpdateSql(request, now, picked, shape.returning),
      guard,
    );
    flow = (await batchAll(db, statements))[1]!;
  }
  // RETURNING order is unspecified in SQLite: restore the lease order.
  const leased = [...plain!, ...flow].map(shape.read).sort(leaseOrder);
  await countLeases(db, request.queue, leased, now);
  return leased;
}

interface LeasedAnswerRow {
  id: string;
  lease_token: string;
  type: string;
  priority: number;
  run_at: number;
  created_at: number;
  started_at: number;
  lease_took_over_expired: number;
  uncounted: string | null;
  view: string;
}

/**
 * The first batch of a lease (see leaseTasks), returning `returning` for each task leased: today's statement,
 * which leases only on a queue without flow control (its pick reads the queue's flow config: one more row read,
 * no row written), then whether flow control leases the queue. Only where it does, `finishRowLease` sends flow
 * control's two statements (src/engine/flow-lease.ts) in a batch of their own: the grant is a ~17 KB statement
 * that took 60-150 ms to compile, on every lease where D1 does not keep it compiled (docs/design/packs.md,
 * "What a lease compiles"). One round trip on a queue without flow control, two on a queue with it.
 *
 * `guard`: a condition read inside the statements; where it is false they lease nothing and write nothing
 * (the served store batches them after a read of its own: src/engine/hybrid/split-lease.ts). Hand the same
 * one to `finishRowLease`, which reads it again in the flow batch.
 */
export function rowLeaseSql(request: LeaseRequest, now: number, returning: SQL, guard: SQL = sql`1`): SQL[] {
  if (!Number.isInteger(request.max) || request.max < 1 || request.max > MAX_BATCH) {
    // SQLite reads LIMIT -1 as "no limit": never let a bad max through to SQL.
    throw new EdgeqError("invalid_request", `max must be an integer from 1 to ${MAX_BATCH} (got ${request.max})`);
  }
  return [leaseSql(request, now, returning, guard), flowAppliesSql(request.queue, guard)];
}

/** Today's lease statement, on a queue without flow control. */
function leaseSql(request: LeaseRequest, now: number, returning: SQL, guard: SQL): SQL {
  // priority >= -MAX_PRIORITY: the pick stops before waiting tasks (src/engine/dependencies.ts, WAITING_PRIORITY).
  return sql`WITH picked AS (
      SELECT id FROM tasks
      WHERE queue = ${request.queue} AND finished_at IS NULL AND priority >= ${-MAX_PRIORITY} AND run_at <= ${now}
        AND ${leasableSql(now)}
      ORDER BY priority DESC, run_at, id
      -- LIMIT 0 on a flow queue: the walk never starts (as a WHERE term, the check ran per live task: a flow
      -- queue's lease read its whole backlog here). max is checked to be an integer (leaseRows): inlined.
      LIMIT (SELECT CASE WHEN EXISTS (SELECT 1 FROM queues WHERE name = ${request.queue} AND flow IS NOT NULL)
        OR NOT (${guard}) THEN 0 ELSE ${sql.raw(String(request.max))} END)
    )
    ${leaseUpdateSql(request, now, sql`SELECT id FROM picked`, returning)}`;
}

/** The UPDATE that leases the tasks `picked` selects (their ids), re-checking each is leasable. */
function leaseUpdateSql(request: LeaseRequest, now: number, picked: SQL, returning: SQL): SQL {
  const vtS =
    request.visibilityTimeoutS !== null
      ? sql`${request.visibilityTimeoutS}`
      : sql`coalesce((SELECT q.visibility_timeout_s FROM queues q WHERE q.name = ${request.queue}),
          ${DEFAULT_QUEUE_CONFIG.visibility_timeout_s})`;
  const expiresAt = sql`(${now} + ${vtS} * 1000)`;
  const claimBy = request.provisional ? sql`min(${now + CLAIM_WINDOW_S * 1000}, ${expiresAt})` : sql`NULL`;
  // A leasable task still processing and not an unclaimed provisional lease: an expired lease taken over,
  // whose attempt this statement ends as "lease expired" (src/engine/redelivery.ts).
  const takesOverExpired = sql`(tasks.state = 'processing' AND NOT ${unclaimedSql(now)})`;
  return sql`UPDATE tasks SET
      state = 'processing',
      attempts = CASE WHEN ${unclaimedSql(now)} THEN attempts ELSE attempts + 1 END,
      errors = CASE WHEN ${takesOverExpired}
        THEN json_insert(errors, '$[#]', json_object('attempt', attempts, 'at', lease_expires_at,
          'message', 'lease expired', 'kind', 'lease_expired'))
        ELSE errors END,
      lease_token = lower(hex(randomblob(16))),
      lease_holder = ${request.holder},
      lease_expires_at = ${expiresAt},
      lease_visibility_s = ${vtS},
      lease_took_over_expired = CASE WHEN ${takesOverExpired} THEN 1 ELSE 0 END,
      claim_by = ${claimBy},
      started_at = coalesce(started_at, ${now}),
      updated_at = ${now},
      uncounted = ${leaseUncountedSql(now, takesOverExpired)}
    WHERE id IN (${picked}) AND finished_at IS NULL AND ${leasableSql(now)}
    RETURNING ${returning}`;
}

/** A lease's counter events kept in the task's row (src/engine/counters-in-row.ts), as countLeases counts
 * them otherwise: leased (with the wait of a first lease), and a lapsed attempt taken over as failed. */
function leaseUncountedSql(now: number, takesOverExpired: SQL): SQL {
  return appendUncountedSql(sql`tasks`, [
    counterEventSql(sql`'leased'`, now, sql`CASE WHEN started_at IS NULL THEN ${now} - max(created_at, run_at) END`),
    sql`CASE WHEN ${takesOverExpired} THEN ${counterEventSql(sql`'failed'`, now)} END`,
  ]);
}

/**
 * Counts a lease's tasks (src/engine/counters.ts): each one leased, for a first lease (started_at set just
 * now) the wait since it became due, and for a task taken over from an expired lease the attempt that
 * lapsed, as failed — as the reaper counts the lapsed attempts it ends. Each lapsed attempt is counted
 * once, by whichever statement ends it: the lease's UPDATE and the reaper's both re-check that the lease
 * is still the expired one, and D1 runs one statement at a time. From the lease's answer, in a call of its own: counting inside
 * the lease's batch has to pick the same tasks a second time (the pick walks past every task in flight),
 * and that made a burn-down's lease of 100 take 4.4-5.1 ms of SQL instead of 3.3 ms (D1's
 * `meta.duration`, `npm run bench -- --only http-profile`, 2026-11-23) — more database time than the
 * extra call's small upsert.
 */
export type CountedLease = LeaseOrdered &
  Pick<StoredTask, "type" | "createdAt" | "runAt" | "startedAt" | "leaseTookOverExpired" | "uncounted">;

function countLeases(db: Db, queue: string, leased: CountedLease[], now: number): Promise<void> {
  return recordCounters(
    db,
    // A task whose events its row keeps had this lease's recorded there by the lease itself.
    leased.flatMap((t): CounterEvent[] => {
      if (t.uncounted !== null) return [];
      const lease: CounterEvent = {
        queue,
        type: t.type,
        counter: "leased",
        wait: t.startedAt === now ? now - Math.max(t.createdAt, t.runAt) : undefined,
      };
      return t.leaseTookOverExpired === 1 ? [lease, { queue, type: t.type, counter: "failed" }] : [lease];
    }),
    now,
  );
}

/**
 * The earliest time after `now` at which one of the queue's live tasks becomes leasable, or null: when
 * the coordinator's alarm should next fire. Always counts pending tasks (a delayed or retried task's
 * run_at); with `leases`, also tasks held under a lease (an unclaimed provisional lease's claim_by, an
 * expired lease's backoff) and a rate-limited flow key's next token (flowTokenTimesSql) — worth an alarm
 * only while someone waits for them (long polls, push mode).
 */
export async function nextRunAt(
  db: Db,
  queue: string,
  now: number,
  opts: { leases?: boolean } = {},
): Promise<number | null> {
  const states = opts.leases ? sql`` : sql` AND state = 'pending'`;
  // While someone waits, also a rate-limited key's next token (flow control): its due tasks are leasable then.
  const tokens = opts.leases ? sql` UNION ALL ${flowTokenTimesSql(queue, now)}` : sql``;
  const row = await db.get<{ next: number | null }>(sql`SELECT min(at) AS next FROM (
      SELECT ${leasableAtSql()} AS at FROM tasks WHERE queue = ${queue} AND finished_at IS NULL${states}${tokens}
    ) WHERE at > ${now}`);
  return row?.next ?? null;
}
