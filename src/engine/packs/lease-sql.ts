import { sql, type SQL } from "drizzle-orm";
import { batchAll, type Db } from "../../db/client";
import { countersSpec, countersUpsertSql } from "../counters";
import { decodePack, PACK_COLUMNS, type Pack, type PackRowRead } from "./pack-row";
import { expiryBackoffMs, type SlotConfig } from "./slot-rules";

/**
 * The pack store's lease of pending slots as SQL evaluated at write time (docs/design/packs.md, "The lease
 * under contention"): one D1 batch whose statements walk the queue's live packs in lease order as they are
 * when the batch runs and take what is there — so leasers racing for one pack each take what the others
 * left, in turn, and none computes its write again (the guarded JavaScript writes of pack-commit.ts retried
 * once per lost race: 25 leases of one pack took 25 rounds).
 *
 * It takes `p` slots only — pending at their pack's run time, on a pack with no other slot leasable now
 * (`rare_at` not come). It stops at the first pack in lease order that has one (a retry due, a released
 * task, a lapsed or unclaimed lease): `probeRare` tells the caller, which takes the rest of the lease from
 * there with the JavaScript rules (lease.ts), so the lease order is kept.
 *
 * What it writes is what the JavaScript lease writes for the same slots (test/engine/packs/lease-sql.test.ts
 * holds the two equal): each slot `r`, its attempts + 1, a lease entry of its own (fresh token, appended to
 * `leases`), its body's `st` if unset and `u`; and the pack's `ready`, `live`, `rare_at`, `next_at` as
 * `packFigures` derives them from the slots: `ready`, `live` counted from the new `st`; `rare_at` the
 * earlier of the pack's (its other slots are unchanged) and the slots' leasable time once leased
 * (`leasableAt` of a processing slot: its claim, else expiry + `expiryBackoffMs`, handed in computed by
 * slot-rules.ts); `next_at` the pack's run time while a `p` slot is left, else `rare_at`.
 * Rows written: one per pack taken from (its index entry unchanged) plus the counters' row.
 */

/** What the plain lease is asked. */
export interface PlainLease {
  queue: string;
  max: number;
  /** One fresh token per slot it may take, in the order it takes them. */
  tokens: string[];
  expires: number;
  claim: number | null;
  holder: string | null;
  vtS: number;
  now: number;
  config: SlotConfig;
}

/** The counts of a lease, as the JavaScript lease counts it (counters.ts): one `leased` per slot, and the
 * wait (due → first lease) of each slot never leased before. */
const LEASE_COUNTS = countersSpec([["leased", "count(*)"]], [{ h: "wait", ms: "wait_ms", when: "first = 1" }]);

/** An integer inlined into the statement (a time, a count; D1 allows 100 bound parameters). */
const int = (n: number): SQL => sql.raw(String(Math.trunc(n)));

/** Null-safe minimum of two nullable numbers (SQLite's min() is NULL when one is). */
const least = (a: SQL, b: SQL): SQL => sql`coalesce(min(${a}, ${b}), ${a}, ${b})`;

/** How many characters of `col` are one of `chars`. */
const countOf = (col: SQL, chars: string[]): SQL => {
  let rest = col;
  for (const ch of chars) rest = sql`replace(${rest}, ${sql.raw(`'${ch}'`)}, '')`;
  return sql`(length(${col}) - length(${rest}))`;
};

/**
 * The selection both statements share, as CTEs: `quota` (per pack in lease order, how many of its `p`
 * slots the lease takes) and `walk`, which takes them one by one in slot order, carrying the pack's new
 * columns as it goes (row j of a pack: its j-th slot taken, at 1-based position `k`) — every value it needs
 * carried, so no step joins another table. Deterministic over the rows as they are, so the counters
 * statement and the UPDATE after it in the same batch (one transaction) select the same slots.
 */
function selectionSql(o: PlainLease): SQL {
  const now = int(o.now);
  const max = int(o.max);
  // The next `p` after position w.k (the slots before it already taken or not pending).
  const nk = sql`(w.k + instr(substr(w.st, w.k + 1), 'p'))`;
  const splice = (col: SQL, text: SQL): SQL =>
    sql`substr(${col}, 1, ${nk} - 1) || ${text} || substr(${col}, ${nk} + 1)`;
  const na = sql`(unicode(substr(w.at, ${nk}, 1)) - 48 + 1)`;
  const lapses = lapsesJson(o);
  // When the slot leased now is leasable again: leasableAt of a processing slot (see lapsesJson).
  const lapse =
    o.claim !== null
      ? int(o.claim)
      : sql`CASE WHEN ${na} < w.ma THEN coalesce(json_extract(${lapses}, '$[' || ${na} || ']'),
          json_extract(${lapses}, '$[#-1]')) END`;
  const entry = sql`json_object('e', ${int(o.expires)}, 'c', ${o.claim === null ? sql`NULL` : int(o.claim)},
    'h', ${o.holder ?? null}, 'v', ${int(o.vtS)}, 't', ${now},
    'k', json_extract(${JSON.stringify(o.tokens)}, '$[' || (w.g0 + w.j) || ']'), 'x', 0)`;
  // The candidates: the queue's leasable packs in lease order, stepped through one `packs_live` seek at a time
  // (`front`, a pack's key and figures as a JSON array: [id, priority, run_at, ready, rare]) while the pending
  // slots ahead of the next one are fewer than `max` and no pack with a rare slot due was met — the packs the
  // lease can take from and the one that stops it, not the first `max` packs (a window over `max` packs read
  // 2 rows per pack, in each of the batch's two statements). Then read whole (slot columns, lease count).
  const due = sql`queue = ${o.queue} AND finished_at IS NULL AND next_at <= ${now}`;
  const key = sql`json_array(id, priority, run_at, ready, rare_at IS NOT NULL AND rare_at <= ${now})`;
  const next = sql`coalesce(
      (SELECT ${key} FROM packs WHERE ${due} AND priority = f.j ->> 1 AND (run_at, id) > (f.j ->> 2, f.j ->> 0)
        ORDER BY run_at, id LIMIT 1),
      (SELECT ${key} FROM packs WHERE ${due} AND priority < f.j ->> 1 ORDER BY priority DESC, run_at, id LIMIT 1))`;
  return sql`front(n, j, before) AS (
      SELECT 1, (SELECT ${key} FROM packs WHERE ${due} ORDER BY priority DESC, run_at, id LIMIT 1), 0
      UNION ALL
      SELECT f.n + 1, ${next}, f.before + (f.j ->> 3) FROM front f
      WHERE f.j IS NOT NULL AND f.j ->> 4 = 0 AND f.before + (f.j ->> 3) < ${max} AND f.n < ${max}
    ),
    cand AS MATERIALIZED (
      SELECT p.id AS pid, p.type, p.priority, p.run_at, p.created_at, p.max_attempts, p.st, p.at, p.lk, p.ready,
        p.rare_at, json_array_length(p.leases) AS nl, f.j ->> 4 AS rare, f.n AS rk
      FROM front f CROSS JOIN packs p ON p.id = f.j ->> 0
      WHERE f.j IS NOT NULL
    ),
    quota AS MATERIALIZED (
      SELECT *, min(ready, ${max} - before) AS take FROM (
        SELECT c.*, coalesce(sum(c.ready) OVER (ORDER BY c.rk ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0)
          AS before
        FROM cand c WHERE c.rk < (SELECT coalesce(min(rk), ${max} + 1) FROM cand WHERE rare))
      WHERE before < ${max} AND ready > 0
    ),
    walk(pid, j, k, take, g0, nl, ma, type, wait_ms, rare_at, run_at, st, at, lk, ents, ks, lapse) AS (
      SELECT pid, 0, 0, take, before, nl, max_attempts, type, ${now} - max(created_at, run_at), rare_at, run_at,
        st, at, lk, '', '', NULL
      FROM quota
      UNION ALL
      SELECT w.pid, w.j + 1, ${nk}, w.take, w.g0, w.nl, w.ma, w.type, w.wait_ms, w.rare_at, w.run_at,
        ${splice(sql`w.st`, sql`'r'`)}, ${splice(sql`w.at`, sql`char(48 + ${na})`)},
        ${splice(sql`w.lk`, sql`char(48 + w.nl + w.j)`)}, w.ents || ',' || ${entry}, w.ks || ',' || (${nk} - 1),
        ${least(sql`w.lapse`, lapse)}
      FROM walk w
      WHERE w.j < w.take AND instr(substr(w.st, w.k + 1), 'p') > 0
    )`;
}

/** The counters of what the lease takes, run first in its batch. */
function countsSql(o: PlainLease): SQL {
  // A slot never leased before has no `st` (first started) in its body: its wait is observed.
  const taken = sql`SELECT ${o.queue} AS queue, w.type, w.wait_ms,
      json_extract(p.slots, '$[' || (w.k - 1) || '].st') IS NULL AS first
    FROM walk w CROSS JOIN packs p ON p.id = w.pid WHERE w.j > 0`;
  return countersUpsertSql(o.now, sql`WITH RECURSIVE ${selectionSql(o)} ${taken}`, LEASE_COUNTS);
}

/**
 * When a slot leased now with `na` attempts becomes leasable again, by attempts (index): its claim when
 * provisional, else its expiry plus the expiry backoff of that attempt — `leasableAt` of slot-rules.ts for a
 * processing slot, computed there and handed to SQL as a JSON array (the pack's max_attempts is applied in
 * SQL: at the last attempt only the reaper moves it on, NULL).
 */
function lapsesJson(o: PlainLease): string {
  return JSON.stringify(Array.from({ length: BACKOFF_STEPS }, (_, a) => o.expires + expiryBackoffMs(a, o.config)));
}

/** How many attempts' lapse times are handed in: past attempt 31 the backoff's exponent is capped
 * (retry-policy.ts), so every later attempt lapses as the last entry. */
const BACKOFF_STEPS = 32;

/** Path/value pairs per JSON function call: SQLite builds before 3.49 cap a function's arguments at 127. */
const PAIRS_PER_CALL = 50;

/** The lease UPDATE: each pack's new columns as `walk` built them, written; returns the rows. */
function updateSql(o: PlainLease): SQL {
  const now = int(o.now);
  // Each slot's body: `st` (first started) inserted when absent, `u` set. One path/value pair per slot the
  // lease may take (`max`); a pack whose turn took fewer repeats its first slot's pair (a no-op).
  const path = (i: number, key: string): SQL =>
    sql.raw(`'$[' || coalesce(json_extract(f.ks, '$[${i}]'), json_extract(f.ks, '$[0]')) || '].${key}'`);
  const pairs = (fn: string, blob: SQL, key: string): SQL => {
    let out = blob;
    for (let from = 0; from < o.max; from += PAIRS_PER_CALL) {
      const some = Array.from(
        { length: Math.min(PAIRS_PER_CALL, o.max - from) },
        (_, i) => sql`${path(from + i, key)}, ${now}`,
      );
      out = sql`${sql.raw(fn)}(${out}, ${sql.join(some, sql`, `)})`;
    }
    return out;
  };
  const ready = countOf(sql`l.st`, ["p"]);
  return sql`WITH RECURSIVE ${selectionSql(o)},
    last AS (SELECT pid, st, at, lk, ents, '[' || substr(ks, 2) || ']' AS ks, lapse, rare_at, run_at, max(j) AS j
      FROM walk GROUP BY pid),
    f AS MATERIALIZED (
      SELECT l.*, ${ready} AS ready, ${countOf(sql`l.st`, ["p", "w", "r"])} AS live,
        ${least(sql`l.rare_at`, sql`l.lapse`)} AS new_rare_at
      FROM last l WHERE l.j > 0
    )
    UPDATE packs SET st = f.st, at = f.at, lk = f.lk,
      leases = jsonb(CASE WHEN json_array_length(packs.leases) = 0 THEN '[' || substr(f.ents, 2) || ']'
        ELSE substr(json(packs.leases), 1, length(json(packs.leases)) - 1) || f.ents || ']' END),
      slots = ${pairs("jsonb_set", pairs("jsonb_insert", sql`packs.slots`, "st"), "u")},
      ready = f.ready, live = f.live, rare_at = f.new_rare_at,
      next_at = CASE WHEN f.ready > 0 THEN ${least(sql`f.run_at`, sql`f.new_rare_at`)} ELSE f.new_rare_at END,
      updated_at = ${now}, ver = ver + 1
    FROM f
    WHERE packs.id = f.pid
    RETURNING ${sql.raw(PACK_COLUMNS)}`;
}

/**
 * Whether the plain lease stopped at a pack with a slot other than a plain pending one leasable now (after the
 * UPDATE): the first pack in lease order with something leasable now has such a slot. The caller reads it
 * only when the lease took fewer than `max` (lease.ts) — then every pack the walk took from was taken whole
 * (its `next_at` no longer come), so the first such pack left is the one that stopped the walk, or there is
 * none. A pack whose figures say nothing is leasable (no `p` slot, `rare_at` not come) is passed over, as the
 * walk passes it. One seek of `packs_live`, where the first `max` packs were read.
 */
function probeRareSql(o: PlainLease): SQL {
  const now = int(o.now);
  return sql`SELECT coalesce((SELECT rare_at IS NOT NULL AND rare_at <= ${now} FROM packs
      WHERE queue = ${o.queue} AND finished_at IS NULL AND next_at <= ${now}
        AND (ready > 0 OR rare_at <= ${now})
      ORDER BY priority DESC, run_at, id LIMIT 1), 0) AS rare`;
}

/** The packs taken from (as written, in lease order; a slot is this lease's when its entry carries one of
 * `tokens`), and whether a pack with a rare slot due stopped the walk. One batch: counters, UPDATE, probe. */
export async function leasePlainSlots(db: Db, o: PlainLease): Promise<{ packs: Pack[]; rare: boolean }> {
  const [, rows, probe] = await batchAll(db, [countsSql(o), updateSql(o), probeRareSql(o)]);
  const packs = (rows as unknown as PackRowRead[]).map(decodePack);
  // RETURNING order is unspecified in SQLite: restore the lease order.
  packs.sort((x, y) => y.priority - x.priority || x.runAt - y.runAt || (x.id < y.id ? -1 : x.id > y.id ? 1 : 0));
  return { packs, rare: Number((probe as Array<{ rare: number }>)[0]?.rare ?? 0) === 1 };
}
