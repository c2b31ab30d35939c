import { sql, type SQL } from "drizzle-orm";
import { MAX_PRIORITY } from "../contracts/limits";
import { leasableSql } from "./redelivery";

/**
 * Flow control's lease (docs/flow-control.md): on a queue whose row has a flow config, leases are made by
 * two statements instead of today's one, in a batch sent after the lease's first one read that the queue has
 * a flow config (`flowAppliesSql`; src/engine/lease.ts: each statement applies only to its kind of queue).
 *
 * Keys first, then each key's tasks, so a lease reads in proportion to the keys it looks at, never the
 * backlog: the keys of the queue's live keyed tasks are walked from the round-robin cursor (a seek per key
 * in the `tasks_keyed` index: the set of keys is the tasks' own, nothing to keep), at most keyWindow(max)
 * of them that may have work — keys with nothing due (every task fresh and delayed) are passed without
 * counting, up to NOT_DUE_KEYS_PASSED of them (mayWorkSql). For each, its state (flow_keys: pause, tokens)
 * and its limits (the queue's config: the key's override, else the default) give how many it may start now:
 * - paused (the key or the queue): none;
 * - concurrency: the limit less its running tasks — counted from the tasks themselves (processing under a
 *   lease that has not expired and is not an unclaimed provisional one), so a count cannot leak, and a
 *   lapsed lease frees its slot the moment its holder's writes are refused;
 * - ordered: one, and none while any started task of the key is not leasable (running, or awaiting its
 *   retry): FIFO per key, retries included (a started task goes first);
 * - rate: the whole tokens of the key's bucket (refilled for the time since it was last written).
 * Each key offers that many of its leasable tasks (fresh ones by the index, in lease order; started ones:
 * retries due, lapsed leases), at most perKeyCap of them, and the lease takes the best of all offers up to
 * `max` and the queue's own tokens: by priority, then (fair) the round — a key's n-th task is in round
 * ⌊(n−1)/weight⌋ — and the key's place after the cursor, else by run_at and id. Unkeyed tasks of the queue
 * are offered as one more key without limits: the first `max` leasable ones of the `tasks_unkeyed` index
 * (however many keyed tasks of blocked keys lead the queue), and — for those enqueued before the queue had a
 * flow config, which have no entry there — leasable ones among the first unkeyedFront(max) live tasks.
 *
 * Two statements, one batch, one pick: the first (grant) computes the pick and writes what it took — each
 * rate-limited key's tokens and grant, and the queue's row (its tokens, the cursor, the lease's total and the
 * picked ids, `flow_keys.picked`) — under a nonce; the second (lease) leases exactly the ids written under
 * that nonce, re-checking each is leasable (nothing else ran between them: a batch is a transaction). Rows
 * written beyond the tasks: one per rate-limited key served, one for the queue's row. (Until migration 0019
 * the second statement computed the same pick again, with each rate-limited key offering its grant: every
 * lease read its keys twice — 139.6 ms against 38.3 ms for a plain lease in the bench's run of 2026-11-27
 * 09:58 UTC, docs/flow-control.md.)
 */

/** Most keys one lease looks at: twice its max, so a lease of one-task-per-key rounds fills even when half
 * the keys it meets are at their limits, at most 200 (a seek, a count and a few reads each: ~1 ms of D1 for
 * 200 keys here), at least 16 (a lease of one still passes over keys at their limits). */
export function keyWindow(max: number): number {
  return Math.min(200, Math.max(16, 2 * max));
}

/** Most keys with nothing due (no started task, every fresh one delayed) one lease walks past beyond its
 * window: such keys do not count towards keyWindow(max), so a due key behind them is leased by the same
 * lease; bounded, because each costs the walk a few index seeks and its own reads of the walk (~11 rows read:
 * 11,227 for a lease passing 1,000 in test/engine/flow-window.test.ts). Behind more, the cursor moves past
 * the ones walked and the next lease goes on from there. */
export const NOT_DUE_KEYS_PASSED = 1000;

/** How deep into the queue's live tasks (in lease order) a flow lease looks for unkeyed ones: four times its
 * max, so the walk stays bounded however many keyed tasks lead the queue (unkeyed tasks have no index of
 * their own: one would cost every plain task a row). */
export function unkeyedFront(max: number): number {
  return 4 * max;
}

/**
 * A new task's `flow_unkeyed` (src/db/schema.ts): 1 when it has no key and its queue has a flow config, so
 * the flow lease finds it by its `tasks_unkeyed` entry; else null (no entry: a plain task's cost). Reads the
 * queue's row once per statement for a constant queue (an uncorrelated subquery).
 */
export function flowUnkeyedSql(key: SQL, queue: SQL | string): SQL {
  return sql`CASE WHEN ${key} IS NULL THEN (SELECT 1 FROM queues WHERE name = ${queue} AND flow IS NOT NULL) END`;
}

/** What the flow lease needs of a lease request (src/engine/lease.ts's LeaseRequest). */
export interface FlowLeaseRequest {
  queue: string;
  max: number;
}

/** 1 when flow control leases `queue` now: its row has a flow config and `guard` holds (read only then). */
export function flowAppliesSql(queue: string, guard: SQL): SQL {
  return sql`SELECT CASE WHEN EXISTS (SELECT 1 FROM queues WHERE name = ${queue} AND flow IS NOT NULL)
      THEN CASE WHEN ${guard} THEN 1 ELSE 0 END ELSE 0 END AS flow`;
}

/** The key of the queue's own row in flow_keys. */
export const QUEUE_ROW_KEY = "";

/**
 * The flow lease's two statements (see the module comment). `update(picked)` is the UPDATE that leases the
 * ids `picked` selects (lease.ts's, shared with today's lease).
 */
export function flowLeaseSql(
  request: FlowLeaseRequest,
  now: number,
  update: (picked: SQL) => SQL,
  guard: SQL = sql`1`,
): [SQL, SQL] {
  const nonce = crypto.randomUUID();
  // `picked` is read three times below (per key, the total, the ids): MATERIALIZED, so it is computed once.
  const grant = sql`WITH RECURSIVE ${pickCtes(request, now, guard)},
    taken AS (SELECT key, count(*) AS n FROM picked WHERE key IS NOT NULL GROUP BY key),
    total AS (SELECT count(*) AS n, (SELECT key FROM picked WHERE key IS NOT NULL ORDER BY pos DESC LIMIT 1) AS last_served,
      (SELECT k FROM walk ORDER BY n DESC LIMIT 1) AS last_seen, (SELECT json_group_array(id) FROM picked) AS ids
      FROM picked)
    INSERT INTO flow_keys (queue, key, tokens, refilled_at, cursor, window_from, granted, lease_nonce, picked, updated_at)
    SELECT * FROM (
      SELECT ${request.queue}, a.k, a.ktok - t.n, ${now}, NULL, NULL, t.n, ${nonce}, NULL, ${now}
        FROM allow a JOIN taken t ON t.key = a.k WHERE a.rc IS NOT NULL
      UNION ALL
      SELECT ${request.queue}, ${QUEUE_ROW_KEY}, CASE WHEN q.qtok IS NULL THEN NULL ELSE q.qtok - total.n END, ${now},
        CASE WHEN total.n >= cap.n THEN coalesce(total.last_served, q.cur) ELSE coalesce(total.last_seen, q.cur) END,
        NULL, total.n, ${nonce}, total.ids, ${now}
        FROM qt q, total, cap
        WHERE total.n > 0 OR q.cur IS NOT coalesce(total.last_seen, q.cur)
    ) WHERE true -- SQLite's parser needs a WHERE before an upsert's ON CONFLICT after a SELECT
    ON CONFLICT (queue, key) DO UPDATE SET tokens = excluded.tokens, refilled_at = excluded.refilled_at,
      cursor = CASE WHEN excluded.key = ${QUEUE_ROW_KEY} THEN excluded.cursor ELSE flow_keys.cursor END,
      window_from = NULL, granted = excluded.granted, lease_nonce = excluded.lease_nonce,
      picked = CASE WHEN excluded.key = ${QUEUE_ROW_KEY} THEN excluded.picked ELSE flow_keys.picked END,
      updated_at = excluded.updated_at`;
  // The ids the grant wrote under this lease's nonce; none when it wrote no queue row (nothing picked).
  const lease = update(sql`SELECT value FROM json_each((SELECT picked FROM flow_keys
    WHERE queue = ${request.queue} AND key = ${QUEUE_ROW_KEY} AND lease_nonce = ${nonce}))`);
  return [grant, lease];
}

/**
 * Whether key `k` of queue `q` may have work for a lease at `now`: it has a started task (in flight, awaiting a
 * retry, or lapsed: whether it is leasable is the pick's question), or a fresh task due — looked for in its
 * top two priority levels (a seek each: the index orders a key's fresh tasks by priority, then run_at, so the
 * first entry of a level is its earliest); a key with a third level is taken as may-have-work, so the check
 * stays a few seeks. False only for a key whose every task is fresh and delayed (or waiting on dependencies:
 * run_at past every lease): such keys do not fill the lease's window.
 */
function mayWorkSql(q: string, k: SQL, now: number): SQL {
  const of = sql`tasks.queue = ${q} AND tasks.flow_key = ${k} AND tasks.flow_key IS NOT NULL AND tasks.finished_at IS NULL`;
  const fresh = (extra: SQL) =>
    sql`SELECT priority AS p, run_at AS r FROM tasks INDEXED BY tasks_keyed WHERE ${of} AND tasks.started_at IS NULL ${extra}
      ORDER BY priority DESC, run_at LIMIT 1`;
  return sql`coalesce((SELECT CASE
      WHEN f1.r <= ${now} THEN 1
      WHEN EXISTS (SELECT 1 FROM tasks INDEXED BY tasks_keyed WHERE ${of} AND tasks.started_at IS NOT NULL) THEN 1
      ELSE coalesce((SELECT f2.r <= ${now} OR EXISTS (SELECT 1 FROM tasks INDEXED BY tasks_keyed WHERE ${of}
          AND tasks.started_at IS NULL AND tasks.priority < f2.p) FROM (${fresh(sql`AND tasks.priority < f1.p`)}) f2), 0)
    END FROM (${fresh(sql``)}) f1), 1)`;
}

/** A field of a key's limits: its override's when the override names it (null included), else the default's
 * (`dflt`: a column of qs, read from the config's JSON once per lease rather than once per key). */
function limitSql(
  path: string,
  dflt: string,
  json: (expr: string, path: string) => string = (e, p) => `${e} ->> '${p}'`,
): string {
  return `CASE WHEN o IS NOT NULL AND json_type(o, '${path}') IS NOT NULL THEN ${json("o", path)} ELSE ${dflt} END`;
}

/**
 * The pick, as CTEs ending in `picked` (id, key, pos), computed from the stored state. `allow` (each key's
 * room: a count of its running tasks, an index seek or two) and `picked` are MATERIALIZED: each is read by
 * several later CTEs, and inlined they were computed again for each (the plan showed every key's count
 * three times over).
 */
function pickCtes(request: FlowLeaseRequest, now: number, guard: SQL): SQL {
  const q = request.queue;
  // Inlined, not bound: D1 binds a JS number as a REAL, and integer arithmetic (a LIMIT's) must stay integer.
  // request.max is checked to be an integer of 1..MAX_BATCH before any statement is built (lease.ts).
  const max = sql.raw(String(Math.trunc(request.max)));
  const window = sql.raw(String(keyWindow(request.max)));
  const steps = sql.raw(String(keyWindow(request.max) + NOT_DUE_KEYS_PASSED));
  // The next key after `after` (a seek in tasks_keyed), prefixed with its flag (mayWorkSql), or null. ORDER BY
  // … LIMIT 1, not min(): in a derived table min() walked every key after `after` (1.8 M rows read per lease).
  const walkStep = (after: SQL) =>
    sql`(SELECT CASE WHEN ${mayWorkSql(q, sql`x.k`, now)} THEN '1' ELSE '0' END || x.k
      FROM (SELECT flow_key AS k FROM tasks INDEXED BY tasks_keyed WHERE queue = ${q} AND flow_key > ${after}
        AND flow_key IS NOT NULL AND finished_at IS NULL ORDER BY flow_key LIMIT 1) x)`;
  // A started task of the key holding a slot: processing under a lease its holder can still write under.
  // (Unaliased: leasableSql names `tasks`.) Each read of a key's tasks names its index: left to itself, the
  // planner took tasks_live for the started range — every live task of the queue, per key (4 M rows read
  // by one lease over 1,000 keys in test/engine/flow-cost.test.ts).
  const running = sql`(tasks.state = 'processing' AND tasks.lease_expires_at > ${now}
    AND NOT (tasks.claim_by IS NOT NULL AND tasks.claim_by <= ${now}))`;
  const keyRange = sql`tasks.queue = ${q} AND tasks.flow_key = a.k AND tasks.flow_key IS NOT NULL
    AND tasks.finished_at IS NULL`;
  // A walk's LIMIT, 0 when the lease may start nothing (no flow config, paused, no token): the walk never
  // starts. As a WHERE term instead, SQLite 3.51 checked it per row and walked the queue's whole backlog.
  const open = (n: SQL) => sql`coalesce((SELECT CASE WHEN n > 0 THEN ${n} ELSE 0 END FROM cap), 0)`;
  return sql`cfg AS (SELECT flow AS f FROM queues WHERE name = ${q} AND flow IS NOT NULL),
    qrow AS (SELECT * FROM flow_keys WHERE queue = ${q} AND key = ${QUEUE_ROW_KEY}),
    qs AS (SELECT f, f -> '$.default.rate' AS d_rate, f ->> '$.default.concurrency' AS d_conc,
        f ->> '$.default.ordered' AS d_ordered, f ->> '$.default.weight' AS d_weight, coalesce(f ->> '$.fair', 0) AS fair,
        coalesce((SELECT paused FROM qrow), 0) AS paused,
        f ->> '$.rate.count' AS rc, CASE f ->> '$.rate.per' WHEN 'minute' THEN 60000.0 ELSE 1000.0 END AS rp,
        coalesce(f ->> '$.rate.burst', f ->> '$.rate.count') AS rb,
        coalesce((SELECT cursor FROM qrow), '') AS cur
      FROM cfg),
    qt AS (SELECT *, CASE WHEN rc IS NULL THEN NULL ELSE min(rb, coalesce((SELECT tokens FROM qrow), rb)
        + (${now} - coalesce((SELECT refilled_at FROM qrow), ${now})) * rc / rp) END AS qtok FROM qs),
    -- The guard is read here, on a flow queue only (cfg has no row otherwise): a false one leases nothing, as
    -- a pause does, and a queue without flow control does not evaluate it again (the served store's guard
    -- reads both layouts' fronts: src/engine/hybrid/split-lease.ts).
    cap AS (SELECT CASE WHEN paused = 1 OR NOT (${guard}) THEN 0 WHEN qtok IS NULL THEN ${max} ELSE min(${max}, CAST(qtok AS INTEGER)) END
      AS n FROM qt),
    -- The round's keys: those after the cursor (lap 0), then from the first up to the cursor (lap 1); one
    -- seek in tasks_keyed per key. Each walked key comes as v = its flag (1: may have work now; 0: nothing due,
    -- see mayWorkSql) then the key, so a step seeks the next key and looks at it once; n counts the flagged
    -- keys before it (at most the window), s every key walked (at most the window plus NOT_DUE_KEYS_PASSED).
    lap0(v, n, s) AS (
      SELECT '0' || cur, 0, 0 FROM qs WHERE (SELECT n FROM cap) > 0
      UNION ALL
      SELECT ${walkStep(sql`substr(lap0.v, 2)`)}, lap0.n + CAST(substr(lap0.v, 1, 1) AS INTEGER), lap0.s + 1 FROM lap0
      WHERE lap0.v IS NOT NULL AND lap0.n + CAST(substr(lap0.v, 1, 1) AS INTEGER) < ${window} AND lap0.s < ${steps}),
    lap1(v, n, s) AS (
      SELECT '0', (SELECT count(*) FROM lap0 WHERE s > 0 AND v LIKE '1%'), (SELECT count(*) FROM lap0 WHERE s > 0 AND v IS NOT NULL)
        FROM qs WHERE cur <> '' AND (SELECT n FROM cap) > 0
      UNION ALL
      SELECT ${walkStep(sql`substr(lap1.v, 2)`)}, lap1.n + CAST(substr(lap1.v, 1, 1) AS INTEGER), lap1.s + 1 FROM lap1, qs
      WHERE lap1.v IS NOT NULL AND substr(lap1.v, 2) < qs.cur AND lap1.n + CAST(substr(lap1.v, 1, 1) AS INTEGER) < ${window}
        AND lap1.s < ${steps}),
    walk(k, n, may) AS (SELECT substr(v, 2), s, substr(v, 1, 1) = '1' FROM lap0 WHERE s > 0 AND v IS NOT NULL
      UNION ALL SELECT substr(v, 2), s, substr(v, 1, 1) = '1' FROM lap1, qs WHERE s > 0 AND v IS NOT NULL
        AND substr(v, 2) <= qs.cur),
    win(k, n) AS (SELECT k, n FROM walk WHERE may),
    keys AS (SELECT w.k, w.n AS pos, coalesce(fk.paused, 0) AS kpaused, fk.tokens AS ktokens,
        fk.refilled_at AS krefilled, ov.value AS o, qs.d_rate, qs.d_conc, qs.d_ordered, qs.d_weight
      FROM win w CROSS JOIN qs LEFT JOIN flow_keys fk ON fk.queue = ${q} AND fk.key = w.k
        LEFT JOIN json_each(qs.f, '$.keys') ov ON ov.key = w.k),
    lim AS (SELECT k, pos, kpaused, ktokens, krefilled,
        ${sql.raw(limitSql("$.concurrency", "d_conc"))} AS conc,
        ${sql.raw(limitSql("$.rate", "d_rate", (e, p) => `${e} -> '${p}'`))} AS rate,
        coalesce(${sql.raw(limitSql("$.ordered", "d_ordered"))}, 0) AS ordered,
        coalesce(${sql.raw(limitSql("$.weight", "d_weight"))}, 1) AS weight
      FROM keys),
    -- hs: the key has a started task (one seek). Most keys have none: their running count and their started
    -- tasks' walk are skipped (a count and a sorted walk per key: a third of the lease's work over 200 keys).
    kst AS MATERIALIZED (SELECT *, rate ->> '$.count' AS rc, CASE rate ->> '$.per' WHEN 'minute' THEN 60000.0 ELSE 1000.0 END AS rp,
        coalesce(rate ->> '$.burst', rate ->> '$.count') AS rb,
        EXISTS (SELECT 1 FROM tasks INDEXED BY tasks_keyed WHERE ${keyRange} AND tasks.started_at IS NOT NULL) AS hs
      FROM lim a),
    -- Its own CTE, so each key's count runs once (flattened into allow's CASE, it ran once per mention).
    room AS MATERIALIZED (SELECT a.*, CASE WHEN a.rc IS NULL THEN NULL ELSE min(a.rb, coalesce(a.ktokens, a.rb)
          + (${now} - coalesce(a.krefilled, ${now})) * a.rc / a.rp) END AS ktok,
        CASE
          WHEN a.kpaused = 1 THEN 0
          WHEN NOT a.hs THEN CASE WHEN a.ordered = 1 THEN 1 ELSE coalesce(a.conc, ${max}) END
          WHEN a.ordered = 1 THEN CASE WHEN EXISTS (SELECT 1 FROM tasks INDEXED BY tasks_keyed WHERE ${keyRange} AND tasks.started_at IS NOT NULL
              AND coalesce(${leasableSql(now)}, 0) = 0) THEN 0 ELSE 1 END
          WHEN a.conc IS NULL THEN ${max}
          ELSE max(0, a.conc - (SELECT count(*) FROM tasks INDEXED BY tasks_keyed WHERE ${keyRange} AND tasks.started_at IS NOT NULL AND ${running}))
        END AS base
      FROM kst a),
    allow AS MATERIALIZED (SELECT *, CASE WHEN rc IS NOT NULL THEN min(base, CAST(ktok AS INTEGER)) ELSE base END AS allow
      FROM room),
    lcap AS (SELECT max(1, (${max} + count(*) - 1) / max(count(*), 1)) * max(coalesce(max(weight), 1), 1) AS l
      FROM allow WHERE allow > 0),
    cand AS (SELECT id, key, priority, run_at, pos, weight, allow,
        row_number() OVER (PARTITION BY key ORDER BY first, priority DESC, run_at, id) AS rn
      FROM (SELECT t.id, t.flow_key AS key, t.priority, t.run_at, a.pos, a.weight, a.allow,
          CASE WHEN a.ordered = 1 AND t.started_at IS NOT NULL THEN 0 ELSE 1 END AS first
        FROM allow a JOIN tasks t ON t.id IN (
          SELECT id FROM (SELECT id FROM tasks INDEXED BY tasks_keyed WHERE ${keyRange} AND tasks.started_at IS NULL
            AND tasks.state = 'pending' AND tasks.run_at <= ${now}
            ORDER BY priority DESC, run_at, id LIMIT (SELECT l FROM lcap))
          UNION ALL
          SELECT id FROM (SELECT id FROM tasks INDEXED BY tasks_keyed WHERE a.hs AND ${keyRange} AND tasks.started_at IS NOT NULL
              AND ${leasableSql(now)}
            ORDER BY priority DESC, run_at, id LIMIT (SELECT l FROM lcap)))
        WHERE a.allow > 0)),
    ucand AS (SELECT id, NULL AS key, priority, run_at, 0 AS pos, 1 AS weight, ${max} AS allow,
        row_number() OVER (ORDER BY priority DESC, run_at, id) AS rn
      FROM (SELECT id, priority, run_at FROM (SELECT id, priority, run_at FROM tasks INDEXED BY tasks_unkeyed
            WHERE queue = ${q} AND flow_unkeyed IS NOT NULL AND finished_at IS NULL AND priority >= ${-MAX_PRIORITY}
              AND run_at <= ${now} AND ${leasableSql(now)}
            ORDER BY priority DESC, run_at, id LIMIT ${open(max)})
          UNION
          SELECT id, priority, run_at FROM (SELECT id, priority, run_at, flow_key,
                CASE WHEN flow_key IS NULL THEN run_at <= ${now} AND ${leasableSql(now)} END AS ok
              FROM tasks WHERE queue = ${q} AND finished_at IS NULL
              ORDER BY priority DESC, run_at, id LIMIT ${open(sql.raw(String(unkeyedFront(request.max))))})
            WHERE flow_key IS NULL AND ok)),
    picked AS MATERIALIZED (SELECT c.id, c.key, c.pos FROM (SELECT * FROM cand WHERE rn <= allow UNION ALL SELECT * FROM ucand) c, qs
      ORDER BY c.priority DESC, CASE WHEN qs.fair THEN (c.rn - 1) / c.weight ELSE 0 END,
        CASE WHEN qs.fair THEN c.pos ELSE 0 END, c.run_at, c.id
      LIMIT coalesce((SELECT n FROM cap), 0))`;
}
