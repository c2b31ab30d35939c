import { sql, type SQL } from "drizzle-orm";
import { countersSpec, countersUpsertSql } from "../counters";
import { decodePack, PACK_COLUMNS, type Pack, type PackRowRead } from "./pack-row";
import { expiryBackoffs, liveCountSql, readyCountSql } from "./slot-column-sql";
import type { SlotConfig } from "./slot-rules";

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
 * What it writes is what the JavaScript lease writes for the same slots, as decoded (pack-row.ts; the test
 * test/engine/packs/lease-sql.test.ts holds the two equal): each slot `r`, its attempts + 1, pointing at the
 * lease entry appended to `leases` for the slots it took from the pack (one per pack: a fresh token, each slot's
 * own being that and its slot characters) — its body's `st` if unset and `u` are that entry's time, not
 * written (pack-row.ts `leaseTimes`); and the pack's `ready`, `live`, `rare_at`, `next_at` as
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
  /** One fresh token per pack it may take from, in lease order (`max` of them: it takes from at most `max`). */
  tokens: string[];
  expires: number;
  claim: number | null;
  holder: string | null;
  vtS: number;
  now: number;
  config: SlotConfig;
  /** A condition the lease applies under (read in its statements, in their batch's transaction): the
   * hybrid's first batch sends the lease beside the row store's, guarded by "the packs come first". */
  guard?: SQL;
}

/** The counts of a lease, as the JavaScript lease counts it (counters.ts): one `leased` per slot, and the
 * wait (due → first lease) of each slot never leased before. */
const LEASE_COUNTS = countersSpec([["leased", "count(*)"]], [{ h: "wait", ms: "wait_ms", when: "first = 1" }]);

/*
 * Every value of a lease is a bound parameter, none is written into the text (the time, `max`, the tokens, the
 * lease entry's fixed part, the lapse times): D1 keeps a compiled statement per text (measured in workerd: a
 * statement of 90 terms 0.05 ms of SQL a call with one text, 0.43 ms with a literal that changes per call), and
 * this batch's two statements of ~6,000 characters took ~1.3 ms to prepare on node:sqlite (docs/design/packs.md,
 * "Statements compiled once"). So each statement has one text per guard and per kind of lapse (a claim or not);
 * its values bound stay under D1's 100 per statement (test/engine/packs/statement-texts.test.ts counts them).
 */

/** Null-safe minimum of two nullable numbers (SQLite's min() is NULL when one is). */
const least = (a: SQL, b: SQL): SQL => sql`coalesce(min(${a}, ${b}), ${a}, ${b})`;

/**
 * The selection both statements share, as CTEs: `front` steps through the queue's leasable packs in lease
 * order, `cand` reads them, and `quota` says how many of each pack's `p` slots the lease takes — its first
 * `take` in slot order. Deterministic over the rows as they are, so the counters statement and the UPDATE
 * after it in the same batch (one transaction) select the same slots.
 */
function quotaSql(o: PlainLease): SQL {
  const now = o.now;
  const max = o.max;
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
      SELECT 1, (SELECT ${key} FROM packs WHERE ${due} ORDER BY priority DESC, run_at, id LIMIT 1), 0${
        o.guard ? sql` WHERE ${o.guard}` : sql``
      }
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
    )`;
}

/** The 1-based position of the next `p` after position w.k: the slots after w.k are as stored (a walk
 * visits each position once, in order). */
const NEXT_K = sql`(w.k + instr(substr(w.st, w.k + 1), 'p'))`;

/** Whether the walk `w` has a slot left to take. */
const MORE = sql`w.j < w.take AND instr(substr(w.st, w.k + 1), 'p') > 0`;

/**
 * The counters of what the lease takes, run first in its batch: the taken slots' positions only. A slot never
 * leased before is one without a lease entry (`lk` a space: no write of the store takes a slot's entry away,
 * and a slot is first started by its first lease, pack-row.ts `leaseTimes`): its wait is observed.
 */
function countsSql(o: PlainLease): SQL {
  return countersUpsertSql(
    o.now,
    sql`WITH RECURSIVE ${quotaSql(o)},
      walk(j, k, take, type, wait_ms, st, lk) AS (
        SELECT 0, 0, take, type, ${o.now} - max(created_at, run_at), st, lk FROM quota
        UNION ALL
        SELECT w.j + 1, ${NEXT_K}, w.take, w.type, w.wait_ms, w.st, w.lk FROM walk w WHERE ${MORE}
      )
      SELECT ${o.queue} AS queue, w.type, w.wait_ms, substr(w.lk, w.k, 1) = ' ' AS first FROM walk w WHERE w.j > 0`,
    LEASE_COUNTS,
  );
}

/**
 * When a slot leased now becomes leasable again, by its attempts once leased (index): its expiry plus the
 * expiry backoff of that attempt — `leasableAt` of slot-rules.ts for a processing slot, computed there and
 * handed to SQL as a JSON array (the pack's max_attempts is applied in SQL: at the last attempt only the
 * reaper moves it on, NULL). A provisional lease's is its claim, whatever the attempt.
 */
function lapsesJson(o: PlainLease): string {
  return JSON.stringify(expiryBackoffs(o.config).map((backoff) => o.expires + backoff));
}

/** Hex characters of a lease token (128 random bits: lease.ts `newTokens`): every token one width, so every
 * lease entry of one lease is one width too, and a pack's entry is cut from them all by position. */
export const TOKEN_HEX = 32;

/**
 * The lease UPDATE, returning the packs as written. Per pack, `walk` takes its first `take` `p` slots in slot
 * order, splicing each one's attempts (`at`) and lease pointer (`lk`: the pack's new entry's index); the pack's new
 * lease entry (`ents`: one for all the slots it took, `s`: each slot's token is the entry's and the slot's
 * characters, slot-rules.ts `slotToken`) is cut from all of this lease's entries as JSON text handed in (one width
 * each: the fixed part and a token), the one of the pack's rank in lease order; `mna` is the
 * fewest attempts a taken slot now has below max_attempts. The walk visits each position once, so the pack's
 * new `st` is its stored one with every `p` up to the last taken position `r` — all of them were taken.
 * The pack's `rare_at` becomes the earlier of its own and the taken slots' leasable time: the claim, or the lapse
 * of `mna` attempts (expiry backoffs grow with attempts, so the fewest lapses first). The slots' bodies are not
 * written: a leased slot's first start and last update are its lease entry's time (pack-row.ts `leaseTimes`),
 * so the statement's size does not grow with the slots it may take.
 */
function updateSql(o: PlainLease): SQL {
  const now = o.now;
  if (o.tokens.some((t) => t.length !== TOKEN_HEX)) throw new Error(`lease tokens must be ${TOKEN_HEX} hex characters`);
  // Every entry of this lease is its fixed part and a token, so all are one width: a pack's entry is cut from them
  // all at its rank, not text built per pack in SQL.
  const head = `${JSON.stringify({ e: o.expires, c: o.claim, h: o.holder, v: o.vtS, t: o.now }).slice(0, -1)},"k":"`;
  const entries = o.tokens.map((token) => `,${head}${token}","s":1,"x":0}`);
  const width = entries[0]?.length ?? 0;
  const splice = (col: SQL, text: SQL): SQL =>
    sql`substr(${col}, 1, ${NEXT_K} - 1) || ${text} || substr(${col}, ${NEXT_K} + 1)`;
  const na = sql`(unicode(substr(w.at, ${NEXT_K}, 1)) - 48 + 1)`;
  const lapses = lapsesJson(o);
  const lapse =
    o.claim !== null
      ? sql`${o.claim}`
      : sql`CASE WHEN l.mna IS NOT NULL THEN coalesce(json_extract(${lapses}, '$[' || l.mna || ']'),
          json_extract(${lapses}, '$[#-1]')) END`;
  const ready = readyCountSql(sql`l.st`);
  return sql`WITH RECURSIVE ${quotaSql(o)},
    walk(pid, j, k, take, rk, nl, ma, rare_at, run_at, st, at, lk, mna) AS (
      SELECT pid, 0, 0, take, rk, nl, max_attempts, rare_at, run_at, st, at, lk, NULL FROM quota
      UNION ALL
      SELECT w.pid, w.j + 1, ${NEXT_K}, w.take, w.rk, w.nl, w.ma, w.rare_at, w.run_at, w.st,
        ${splice(sql`w.at`, sql`char(48 + ${na})`)}, ${splice(sql`w.lk`, sql`char(48 + w.nl)`)},
        CASE WHEN ${na} < w.ma THEN min(coalesce(w.mna, ${na}), ${na}) ELSE w.mna END
      FROM walk w WHERE ${MORE}
    ),
    last AS (SELECT pid, replace(substr(st, 1, k), 'p', 'r') || substr(st, k + 1) AS st, at, lk,
        substr(${entries.join("")}, (rk - 1) * ${width} + 1, ${width}) AS ents, mna, rare_at, run_at, j
      FROM walk WHERE j = take OR instr(substr(st, k + 1), 'p') = 0),
    f AS MATERIALIZED (
      SELECT l.*, ${ready} AS ready, ${liveCountSql(sql`l.st`)} AS live,
        ${least(sql`l.rare_at`, lapse)} AS new_rare_at
      FROM last l WHERE l.j > 0
    )
    UPDATE packs SET st = f.st, at = f.at, lk = f.lk,
      leases = jsonb(CASE WHEN json_array_length(packs.leases) = 0 THEN '[' || substr(f.ents, 2) || ']'
        ELSE substr(json(packs.leases), 1, length(json(packs.leases)) - 1) || f.ents || ']' END),
      ready = f.ready, live = f.live, rare_at = f.new_rare_at,
      next_at = CASE WHEN f.ready > 0 THEN ${least(sql`f.run_at`, sql`f.new_rare_at`)} ELSE f.new_rare_at END,
      updated_at = ${now}, ver = ver + 1
    FROM f
    WHERE packs.id = +f.pid
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
  const now = o.now;
  return sql`SELECT coalesce((SELECT rare_at IS NOT NULL AND rare_at <= ${now} FROM packs
      WHERE queue = ${o.queue} AND finished_at IS NULL AND next_at <= ${now}
        AND (ready > 0 OR rare_at <= ${now})
      ORDER BY priority DESC, run_at, id LIMIT 1), 0) AS rare`;
}

/** The lease's batch, in order: counters, UPDATE, probe (`readPlainLease` reads their results). */
export function plainLeaseStatements(o: PlainLease): SQL[] {
  return [countsSql(o), updateSql(o), probeRareSql(o)];
}

/** The packs taken from (as written, in lease order; a slot is this lease's when its entry carries one of
 * `tokens`), the rows they were decoded from, and whether a pack with a rare slot due stopped the walk, from `plainLeaseStatements`' results. */
export function readPlainLease(results: unknown[]): { packs: Pack[]; rows: PackRowRead[]; rare: boolean } {
  const [, returned, probe] = results;
  const rows = returned as PackRowRead[];
  const packs = rows.map(decodePack);
  // RETURNING order is unspecified in SQLite: restore the lease order.
  packs.sort((x, y) => y.priority - x.priority || x.runAt - y.runAt || (x.id < y.id ? -1 : x.id > y.id ? 1 : 0));
  return { packs, rows, rare: Number((probe as Array<{ rare: number }>)[0]?.rare ?? 0) === 1 };
}
