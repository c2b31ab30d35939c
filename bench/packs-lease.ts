/**
 * The packs prototype's lease (docs/design/packs.md): ONE D1 batch of two statements over the same
 * selection — the per-minute counters of what the lease takes, then the lease itself — so a lease is one
 * round trip and its counts are exact (the batch is one transaction; the selection is deterministic).
 *
 * The fast path, for a pack with nothing but `p` slots leasable (rare_at not due) whose first `take` pending
 * slots are consecutive and on their first attempt: the slots are found with instr/substr, the statement
 * writes one range of `st`, `at` and `lk`, appends one entry to `leases`, and copies `slots` untouched; the
 * views read the bodies of the slots taken only. Every other pack (a retry due, a lapsed lease, pending
 * slots out of order) takes the rare path: every slot of the pack is evaluated, as the first prototype did.
 */
import { sql, type SQL } from "drizzle-orm";
import type { Db } from "../src/db/client";
import { countersSpec, countersUpsertSql, minuteOf } from "../src/engine/counters";
import { CLAIM_WINDOW_S, MAX_BATCH } from "../src/contracts/limits";
import {
  arg,
  at,
  charNum,
  countChar,
  expiryBackoff,
  leasableAt,
  numbered,
  numChar,
  rep,
  SEQ_CTE,
  slotIdSql,
  iso,
  splice,
  DEFAULT_PACK_CONFIG,
  type Backoff,
  type PackQueueConfig,
} from "./packs-slot-sql";

export interface PackLeaseRequest {
  queue: string;
  max: number;
  visibilityTimeoutS: number | null;
  holder: string | null;
  provisional?: boolean;
}

/** A lease: its tasks' views as the API sends them, and their ids under the one token of this call. */
export interface PackLease {
  /** The tasks' LeasedTaskViews, a JSON array's inside (no brackets), ready to join into `{"tasks":[…]}`. */
  views: string;
  count: number;
  token: string;
  ids: string[];
}

const LEASE_COUNTS = countersSpec(
  [
    ["leased", "count(*)"],
    ["failed", "sum(s.took)"],
  ],
  [{ h: "wait", ms: "wait_ms", when: "first = 1" }],
);

/**
 * Leases up to `max` leasable tasks of a queue. Never leased twice: D1 runs one statement at a time, and a
 * slot is taken only if it is leasable in the row this very statement rewrites. The token is this call's
 * own (128 random bits), kept in the lease entry its slots point at, so a stale holder is refused.
 */
export async function leasePacks(
  db: Db,
  request: PackLeaseRequest,
  now: number,
  config: PackQueueConfig = DEFAULT_PACK_CONFIG,
): Promise<PackLease> {
  const lease = prepareLease(db, request, now, config);
  return lease.finish(await db.$client.batch(lease.statements));
}

/** A lease made ready to run: its batch's statements and what reads their results — apart, so a caller can
 * run them after an ack in one batch (bench/packs-engine.ts's `ackThenLeasePacks`). */
export interface PreparedLease {
  statements: D1PreparedStatement[];
  finish(results: D1Result[]): PackLease;
}

type LeasedRow = { id: string; priority: number; run_at: number; views: string; ids: string };

export function prepareLease(
  db: Db,
  request: PackLeaseRequest,
  now: number,
  config: PackQueueConfig = DEFAULT_PACK_CONFIG,
): PreparedLease {
  if (!Number.isInteger(request.max) || request.max < 1 || request.max > MAX_BATCH) {
    throw new Error(`max must be an integer from 1 to ${MAX_BATCH} (got ${request.max})`);
  }
  const token = [...crypto.getRandomValues(new Uint8Array(16))].map((x) => x.toString(16).padStart(2, "0")).join("");
  return {
    statements: leaseStatements(db, request, now, token, config),
    finish(results) {
      const rows = (results[1]?.results ?? []) as LeasedRow[];
      // RETURNING order is unspecified in SQLite: restore the lease order (a pack's slots are in order).
      rows.sort((x, y) => y.priority - x.priority || x.run_at - y.run_at || (x.id < y.id ? -1 : x.id > y.id ? 1 : 0));
      const ids = rows.flatMap((r) => r.ids.split(","));
      return { views: rows.map((r) => r.views).join(","), count: ids.length, token, ids };
    },
  };
}

/**
 * The lease's statements' own parameters, by number: the text of both statements is then the same on
 * every call (per queue backoff), so the database compiles each once and reuses it, and each value is
 * bound once, however often the statement reads it (D1 allows 100 parameters).
 */
const A = {
  now: arg(1),
  max: arg(2),
  queue: arg(3),
  token: arg(4),
  holder: arg(5),
  expires: arg(6),
  claim: arg(7),
  vtS: arg(8),
};

/** The lease's batch: the counters of what it takes, then the lease (exported for profiling). */
export function leaseStatements(
  db: Db,
  request: PackLeaseRequest,
  now: number,
  token: string,
  config: PackQueueConfig,
): D1PreparedStatement[] {
  const o: LeaseOptions = {
    ...request,
    now,
    token,
    vtS: request.visibilityTimeoutS ?? config.visibilityS,
    b: config.backoff,
  };
  const expires = now + o.vtS * 1000;
  const claim = o.provisional ? Math.min(now + CLAIM_WINDOW_S * 1000, expires) : null;
  const args = [now, o.max, o.queue, token, o.holder, expires, claim, o.vtS];
  // What the statements' text and own values depend on besides `args`: the backoff, the counters' minute.
  const key = `${JSON.stringify(o.b)}|${minuteOf(now)}`;
  return [
    numbered(
      db,
      `lease-count|${key}`,
      () => countersUpsertSql(now, sql`WITH RECURSIVE ${selection(o)} SELECT * FROM tk`, LEASE_COUNTS),
      args,
    ),
    numbered(db, `lease|${key}`, () => leaseUpdateSql(o), args),
  ];
}

interface LeaseOptions extends PackLeaseRequest {
  now: number;
  token: string;
  vtS: number;
  b: Backoff;
}

/** Every slot of the packs named by `packs` (a CTE with `pid`), with what decides its leasability. */
function slotRows(packs: string, o: LeaseOptions): SQL {
  const ch = sql`substr(p.st, s.k + 1, 1)`;
  const a = charNum(sql`substr(p.at, s.k + 1, 1)`);
  const li = sql`CASE WHEN substr(p.lk, s.k + 1, 1) <> ' ' THEN ${charNum(sql`substr(p.lk, s.k + 1, 1)`)} END`;
  const inner = sql`SELECT x.pid, s.k, ${ch} AS ch, ${a} AS a, substr(p.lk, s.k + 1, 1) AS lkc,
      CASE WHEN ${ch} = 'r' THEN jsonb_extract(p.leases, ${at(li)}) END AS le,
      CASE WHEN ${ch} = 'w' THEN jsonb_extract(p.slots, ${at(sql`s.k`, "t")}) END AS wt,
      p.run_at, p.max_attempts, p.created_at
    FROM ${sql.raw(packs)} x CROSS JOIN packs p ON p.id = x.pid JOIN seq s ON s.k < p.n`;
  const lzAt = leasableAt(
    { ch: sql`ch`, a: sql`a`, le: sql`le`, wt: sql`wt`, runAt: sql`run_at`, maxAttempts: sql`max_attempts` },
    o.b,
  );
  return sql`SELECT *, ${lzAt} AS lz_at FROM (${inner})`;
}

/**
 * The selection both statements share, as CTEs ending in `tk`: one row per slot the lease takes (pid, k,
 * its attempts after the lease `na`, first: a first attempt, took: an expired lease taken over, wait_ms),
 * plus `quota` (per pack: fast, contiguous, lo, take) and `gtake` (the rare path's slots).
 */
function selection(o: LeaseOptions): SQL {
  const now = A.now;
  const max = A.max;
  const order = sql`ORDER BY priority DESC, run_at, pid ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING`;
  // The walk of the live index: pack after pack in lease order (each one index seek), only as far as the
  // packs' leasable counts (`ready` on the fast path, `n` on the rare one) fill the lease.
  const live = (t: string) => sql.raw(`${t}.queue = ?3 AND ${t}.finished_at IS NULL AND ${t}.next_at <= ?1`);
  const fast = (t: string) => sql.raw(`(${t}.rare_at IS NULL OR ${t}.rare_at > ?1)`);
  const upTo = (t: string) => sql.raw(`CASE WHEN ${t}.fast THEN ${t}.ready ELSE ${t}.n END`);
  return sql`${SEQ_CTE},
    cand(pid, priority, run_at, n, ready, fast, before) AS (
      SELECT * FROM (SELECT id, priority, run_at, n, ready, ${fast("packs")}, 0 FROM packs
        WHERE ${live("packs")} ORDER BY priority DESC, run_at, id LIMIT 1)
      UNION ALL
      SELECT p.id, p.priority, p.run_at, p.n, p.ready, ${fast("p")}, c.before + ${upTo("c")}
      FROM cand c CROSS JOIN packs p ON p.id = coalesce(
        (SELECT x.id FROM packs x WHERE ${live("x")} AND x.priority = c.priority AND (x.run_at, x.id) > (c.run_at, c.pid)
          ORDER BY x.priority DESC, x.run_at, x.id LIMIT 1),
        (SELECT x.id FROM packs x WHERE ${live("x")} AND x.priority < c.priority
          ORDER BY x.priority DESC, x.run_at, x.id LIMIT 1))
      WHERE c.before + ${upTo("c")} < ${max}
    ),
    cut AS (SELECT * FROM cand),
    slowp AS MATERIALIZED (SELECT pid FROM cut WHERE NOT fast AND before < ${max}),
    sl AS MATERIALIZED (${slotRows("slowp", o)}),
    free AS (
      SELECT c.pid, c.priority, c.run_at, c.fast, CASE WHEN c.fast THEN c.ready ELSE coalesce(f.free, 0) END AS free
      FROM cut c LEFT JOIN (SELECT pid, sum(lz_at <= ${now}) AS free FROM sl GROUP BY pid) f ON f.pid = c.pid
      WHERE c.before < ${max}
    ),
    quota AS MATERIALIZED (
      SELECT q.*, p.n, p.priority, p.run_at, p.created_at, p.type, p.max_attempts, instr(p.st, 'p') - 1 AS lo,
        ${iso(sql`p.created_at`)} AS created_iso, ${iso(sql`p.run_at`)} AS run_iso,
        q.fast AND substr(p.st, instr(p.st, 'p'), q.take) = ${rep(sql`'p'`, sql`q.take`)}
          AND substr(p.at, instr(p.st, 'p'), q.take) = ${rep(sql`'0'`, sql`q.take`)} AS contiguous
      FROM (SELECT pid, fast, min(free, ${max} - coalesce(sum(free) OVER (${order}), 0)) AS take FROM free) q
      CROSS JOIN packs p ON p.id = q.pid
      WHERE q.take > 0
    ),
    fastp AS MATERIALIZED (SELECT pid FROM quota WHERE fast AND NOT contiguous),
    sl2 AS MATERIALIZED (${slotRows("fastp", o)}),
    gtake AS MATERIALIZED (
      SELECT g.*, q.take, coalesce(g.lz_at <= ${now} AND row_number() OVER (PARTITION BY g.pid, g.lz_at <= ${now}
        ORDER BY g.k) <= q.take, 0) AS taken,
        (g.ch = 'r' AND (g.le->>'c') IS NULL) AS took
      FROM (SELECT * FROM sl UNION ALL SELECT * FROM sl2) g JOIN quota q ON q.pid = g.pid
    ),
    -- The fast path's slots, counted out one by one (a join to all PACK_SLOTS of seq would read them all).
    fastk(pid, k, last, wait_ms, type) AS (
      SELECT pid, lo, lo + take - 1, ${now} - max(created_at, run_at), type FROM quota WHERE contiguous
      UNION ALL
      SELECT pid, k + 1, last, wait_ms, type FROM fastk WHERE k < last
    ),
    tk AS MATERIALIZED (
      SELECT pid, k, 1 AS na, 1 AS first, 0 AS took, wait_ms, type, ${A.queue} AS queue FROM fastk
      UNION ALL
      SELECT g.pid, g.k, CASE WHEN g.ch = 'r' AND NOT g.took THEN g.a ELSE g.a + 1 END, g.a = 0 AND g.ch <> 'r', g.took,
        ${now} - max(g.created_at, coalesce(g.wt, g.run_at)), q.type, ${A.queue}
      FROM gtake g JOIN quota q ON q.pid = g.pid
      WHERE g.taken
    )`;
}

/**
 * A leased slot's LeasedTaskView (src/contracts/task.ts; `leasedViewJsonSql`'s fields in its order), over the
 * `tk` row `t`, its pack's `quota` row `q`, the lease's `ent` row and the slot's body `sb`: what every slot
 * of a pack shares (times, holder, token) is rendered once per lease or pack, not per slot.
 */
function leasedViewSql(sb: SQL): SQL {
  return sql`json_object(
    'id', ${slotIdSql(sql`t.pid`, sql`t.k`)}, 'queue', ${A.queue}, 'type', q.type, 'state', 'processing',
    'priority', q.priority,
    'errors', CASE WHEN (${sb}->'er') IS NULL THEN json('[]') ELSE json((SELECT json_group_array(json_set(e.value,
      '$.at', ${iso(sql`e.value->>'at'`)})) FROM json_each(${sb}->'er') AS e)) END,
    'attempts', t.na, 'max_attempts', q.max_attempts,
    'run_at', CASE WHEN (${sb}->>'t') IS NULL THEN q.run_iso ELSE ${iso(sql`${sb}->>'t'`)} END,
    'lease_holder', ${A.holder}, 'lease_expires_at', ent.exp_iso, 'claim_by', ent.claim_iso,
    'cancel_requested', json('false'), 'dedupe_key', ${sb}->>'d', 'group', ${sb}->>'g',
    'progress', ${sb}->>'p', 'progress_message', ${sb}->>'m',
    'created_at', q.created_iso, 'updated_at', ent.now_iso,
    'started_at', CASE WHEN (${sb}->>'st') IS NULL THEN ent.now_iso ELSE ${iso(sql`${sb}->>'st'`)} END,
    'finished_at', NULL, 'lease_token', ${A.token},
    'payload', ${sb}->'b', 'result', ${sb}->'r', 'checkpoint', ${sb}->'cp', 'then', ${sb}->'th')`;
}

/** The lease statement: the selection, each pack's new columns (`plan`), its views (`vw`), the UPDATE. */
function leaseUpdateSql(o: LeaseOptions): SQL {
  const now = A.now;
  const entry = sql`jsonb_object('k', ${A.token}, 'e', ${A.expires}, 'c', ${A.claim}, 'h', ${A.holder}, 'v', ${A.vtS}, 't', ${now})`;
  // When a slot leased now lapses at the earliest: its claim, or its expiry + the backoff of its attempt.
  const lapse = (na: SQL) => sql`coalesce(${A.claim}, ${A.expires} + ${expiryBackoff(na, o.b)})`;
  const li = sql`json_array_length(p.leases)`;
  const took = sql`jsonb_set(jsonb_extract(p.slots, ${at(sql`g.k`)}),
    '$.er', jsonb_insert(coalesce(jsonb_extract(p.slots, ${at(sql`g.k`, "er")}), jsonb('[]')), '$[#]',
      json_object('attempt', g.a, 'at', g.le->>'e', 'message', 'lease expired', 'kind', 'lease_expired')),
    '$.st', coalesce(jsonb_extract(p.slots, ${at(sql`g.k`, "st")}), g.le->>'t'))`;
  const leased = (s: string) => sql.raw(s);
  return sql`WITH RECURSIVE ${selection(o)},
    gpack AS MATERIALIZED (
      SELECT g.pid,
        group_concat(CASE WHEN g.taken THEN 'r' ELSE g.ch END, '' ORDER BY g.k) AS st,
        group_concat(${numChar(sql`CASE WHEN g.taken THEN t.na ELSE g.a END`)}, '' ORDER BY g.k) AS at,
        group_concat(CASE WHEN g.taken THEN ${numChar(li)} ELSE g.lkc END, '' ORDER BY g.k) AS lk,
        min(CASE WHEN g.taken THEN ${lapse(sql`t.na`)} WHEN g.ch IN ('w', 'r') THEN g.lz_at END) AS rare_at,
        CASE WHEN sum(g.taken AND g.took) > 0 THEN jsonb_group_array(CASE WHEN g.taken AND g.took THEN ${took}
          ELSE jsonb_extract(p.slots, ${at(sql`g.k`)}) END ORDER BY g.k) END AS slots
      FROM gtake g CROSS JOIN packs p ON p.id = g.pid LEFT JOIN tk t ON t.pid = g.pid AND t.k = g.k
      GROUP BY g.pid
    ),
    ent AS MATERIALIZED (SELECT ${entry} AS le, ${iso(now)} AS now_iso, ${iso(A.expires)} AS exp_iso,
      ${iso(A.claim)} AS claim_iso),
    tb AS MATERIALIZED (
      SELECT t.pid, t.k, t.na, coalesce(jsonb_extract(g.slots, ${at(sql`t.k`)}), jsonb_extract(p.slots, ${at(sql`t.k`)})) AS sb
      FROM tk t CROSS JOIN packs p ON p.id = t.pid LEFT JOIN gpack g ON g.pid = t.pid
    ),
    vw AS MATERIALIZED (
      SELECT t.pid, group_concat(${slotIdSql(sql`t.pid`, sql`t.k`)}, ',' ORDER BY t.k) AS ids,
        group_concat(${leasedViewSql(sql`t.sb`)}, ',' ORDER BY t.k) AS views
      FROM tb t JOIN quota q ON q.pid = t.pid, ent
      GROUP BY t.pid
    ),
    plan AS MATERIALIZED (
      SELECT pid, st, at, lk, rare_at, slots, ${countChar(leased("st"), "p")} AS ready, views, ids FROM (
        SELECT q.pid,
          CASE WHEN q.contiguous THEN ${splice(sql`p.st`, sql`q.lo`, sql`q.take`, rep(sql`'r'`, sql`q.take`))} ELSE g.st END AS st,
          CASE WHEN q.contiguous THEN ${splice(sql`p.at`, sql`q.lo`, sql`q.take`, rep(sql`'1'`, sql`q.take`))} ELSE g.at END AS at,
          CASE WHEN q.contiguous THEN ${splice(sql`p.lk`, sql`q.lo`, sql`q.take`, rep(numChar(li), sql`q.take`))} ELSE g.lk END AS lk,
          CASE WHEN q.contiguous THEN min(coalesce(p.rare_at, ${lapse(sql`1`)}), ${lapse(sql`1`)}) ELSE g.rare_at END AS rare_at,
          g.slots, v.views, v.ids
        FROM quota q CROSS JOIN packs p ON p.id = q.pid LEFT JOIN gpack g ON g.pid = q.pid LEFT JOIN vw v ON v.pid = q.pid)
    )
    UPDATE packs SET st = plan.st, at = plan.at, lk = plan.lk, leases = jsonb_insert(packs.leases, '$[#]', ${entry}),
      slots = coalesce(plan.slots, packs.slots), ready = plan.ready, rare_at = plan.rare_at,
      next_at = CASE WHEN plan.ready > 0 THEN min(run_at, coalesce(plan.rare_at, run_at)) ELSE plan.rare_at END,
      updated_at = ${now}
    FROM plan
    WHERE packs.id = plan.pid
    RETURNING packs.id AS id, packs.priority AS priority, packs.run_at AS run_at,
      (SELECT x.views FROM plan x WHERE x.pid = packs.id) AS views,
      (SELECT x.ids FROM plan x WHERE x.pid = packs.id) AS ids`;
}
