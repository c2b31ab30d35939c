/**
 * The packs prototype's acks (docs/design/packs.md): complete, fail and release of leased slots, each call
 * ONE D1 batch — the fenced rewrite of every pack an item names (one row written per pack, whatever the
 * number of its items), then the counters over exactly the slots it changed.
 *
 * An ack flips characters: the slots' states (and, for a release, attempts) in `st`/`at`, and their `lk`
 * to a copy of their lease entry that records when and how the lease ended (so a repeated ack is
 * recognised). When the slots of one pack are consecutive, share one lease and one new state — an ack of
 * a whole lease — that is one range of each string; otherwise every slot of the pack is walked. The JSON
 * bodies are touched only where the task's own data changes: a result, a failure's error and retry time,
 * a release's run_at — one edit per such slot, by path.
 */
import { sql, type SQL } from "drizzle-orm";
import type { Db } from "../src/db/client";
import { countersSpec, countersUpsertSql, minuteOf } from "../src/engine/counters";
import { packOf, slotChars } from "./packs-schema";
import {
  arg,
  at,
  charNum,
  countChar,
  failureBackoff,
  fence,
  numbered,
  numChar,
  rep,
  SEQ_CTE,
  splice,
  DEFAULT_PACK_CONFIG,
  type PackQueueConfig,
} from "./packs-slot-sql";

/** What an ack does to a fenced slot: complete.ts, fail.ts (+ retry-policy.ts), release.ts. */
export type AckKind = "complete" | "fail" | "release";

/** One ack item: the task, its lease token, and the kind's own fields. */
export interface PackAckItem {
  id: string;
  leaseToken: string;
  result?: unknown;
  message?: string;
  permanent?: boolean;
  retryAfterMs?: number;
}

export interface PackAckOutcome {
  id: string;
  ok: boolean;
  /** The state the slot is in now (`ok`; p pending, c completed, d dead), or why not. */
  state?: string;
  error?: string;
  repeated?: boolean;
}

/** The ack statements' own parameters (see `numbered`): their text is the same on every call of a kind. */
const A = { now: arg(1), json: arg(2), queue: arg(3), ranges: arg(4), call: arg(5) };

/** The range statement's own parameters. */
const R = { now: arg(1), ranges: arg(2), queue: arg(3), call: arg(4) };

/** The mark an ack leaves in the copy of the lease entry (`w`). */
const MARK: Record<AckKind, string> = { complete: "c", fail: "f", release: "l" };

/** What each ack counts, over the slots it changed (`s`): counters' columns and aggregates. */
const ACK_COUNTS = {
  complete: countersSpec(
    [["completed", "sum(s.state = 'c')"]],
    [{ h: "run", ms: "run_ms", when: "state = 'c' AND started_at IS NOT NULL" }],
  ),
  fail: countersSpec(
    [
      ["failed", "count(*)"],
      ["dead", "sum(s.state = 'd')"],
    ],
    [{ h: "run", ms: "run_ms", when: "state = 'd' AND started_at IS NOT NULL" }],
  ),
};

/**
 * Acks items of one queue. Each item succeeds or fails on its own: a wrong, stale or expired token changes
 * nothing for its slot (`lease_lost`); repeating an applied ack with the same token is a success with
 * `repeated`, as src/engine/ack.ts answers it.
 */
export async function ackPacks(
  db: Db,
  kind: AckKind,
  queue: string,
  items: PackAckItem[],
  now: number,
  config: PackQueueConfig = DEFAULT_PACK_CONFIG,
): Promise<PackAckOutcome[]> {
  const ack = prepareAck(db, kind, queue, items, now, config);
  return ack.finish(ack.statements.length ? await db.$client.batch(ack.statements) : []);
}

/** An ack made ready to run: its statements (none when no item names a slot), and what reads their results
 * into each item's outcome — apart, so a caller can run them in a batch of its own (an ack that carries the
 * next lease: bench/packs-engine.ts's `ackThenLeasePacks`). */
export interface PreparedAck {
  statements: D1PreparedStatement[];
  finish(results: D1Result[]): Promise<PackAckOutcome[]>;
}

export function prepareAck(
  db: Db,
  kind: AckKind,
  queue: string,
  items: PackAckItem[],
  now: number,
  config: PackQueueConfig = DEFAULT_PACK_CONFIG,
): PreparedAck {
  const seen = new Set<string>();
  const parsed = items.map((item) => {
    const place = packOf(item.id);
    const dup = seen.has(item.id);
    seen.add(item.id);
    return { item, place, dup };
  });
  const valid = parsed.filter((p) => p.place && !p.dup);
  const { ranges, single } = splitRanges(kind, valid);
  const json = JSON.stringify(
    single.map(({ item, place }) => ({
      p: place!.pack,
      s: place!.slot,
      k: item.leaseToken,
      ...(item.result === undefined ? {} : { r: item.result }),
      m: item.message ?? null,
      perm: item.permanent ? 1 : 0,
      ra: item.retryAfterMs ?? null,
    })),
  );
  const rangesJson = JSON.stringify(ranges);
  const mark = MARK[kind];
  // This call's own mark in the entries it ends, so its counters count what it changed and nothing a
  // repeat of it (same token, same ms) finds already ended.
  const call = [...crypto.getRandomValues(new Uint8Array(8))].map((x) => x.toString(16).padStart(2, "0")).join("");
  const args = [now, json, queue, rangesJson, call];
  // What the statements' text and own values depend on besides `args`: the kind, the backoff, the minute.
  const key = `${kind}|${JSON.stringify(config.backoff)}|${minuteOf(now)}`;
  const statements: D1PreparedStatement[] = [];
  if (ranges.length) statements.push(numbered(db, `ack-range`, () => rangeSql(), [now, rangesJson, queue, call]));
  statements.push(numbered(db, `ack|${key}`, () => ackSql(kind, config), args));
  if (kind !== "release") {
    const counts = ACK_COUNTS[kind];
    statements.push(
      numbered(db, `ack-count|${key}`, () => countersUpsertSql(now, changedSlotsSql(mark), counts), args),
    );
  }
  return {
    statements: valid.length ? statements : [],
    finish(results) {
      // RETURNING names the rewritten pack only; a pack has at most one range per call.
      const rangeOf = new Map(ranges.map((r) => [r.p, r]));
      const rangeRows = (ranges.length ? (results[0]?.results ?? []) : []) as Array<{ id: string }>;
      const changed = (results[ranges.length ? 1 : 0]?.results ?? []) as ChangedRow[];
      for (const { id } of rangeRows) {
        const r = rangeOf.get(id)!;
        changed.push({ id, changed: JSON.stringify(Array.from({ length: r.n }, (_, i) => [r.lo + i, "c"])) });
      }
      return ackOutcomes(db, queue, mark, parsed, valid, changed);
    },
  };
}

type Parsed = { item: PackAckItem; place: ReturnType<typeof packOf>; dup: boolean };

/** A run of consecutive slots of one pack under one token, acked as one range (`rangeSql`). */
interface Range {
  p: string;
  lo: number;
  n: number;
  k: string;
}

/**
 * The items a range can take: completions without a result (the rest change a slot's body, one by one),
 * grouped by pack and token into runs of consecutive slots — the whole lease of a worker that finished it.
 * One range per pack per call (an UPDATE … FROM rewrites a row once); every other item goes one by one.
 */
function splitRanges(kind: AckKind, valid: Parsed[]): { ranges: Range[]; single: Parsed[] } {
  if (kind !== "complete") return { ranges: [], single: valid };
  const single: Parsed[] = [];
  const groups = new Map<string, Parsed[]>();
  for (const v of valid) {
    if (v.item.result !== undefined) single.push(v);
    else {
      const key = `${v.place!.pack}|${v.item.leaseToken}`;
      const group = groups.get(key);
      if (group) group.push(v);
      else groups.set(key, [v]);
    }
  }
  const ranges: Range[] = [];
  const ranged = new Set<string>();
  for (const group of groups.values()) {
    group.sort((x, y) => x.place!.slot - y.place!.slot);
    let start = 0;
    for (let i = 1; i <= group.length; i++) {
      if (i < group.length && group[i]!.place!.slot === group[i - 1]!.place!.slot + 1) continue;
      const run = group.slice(start, i);
      const { pack, slot } = run[0]!.place!;
      if (ranged.has(pack)) single.push(...run);
      else {
        ranged.add(pack);
        ranges.push({ p: pack, lo: slot, n: run.length, k: run[0]!.item.leaseToken });
      }
      start = i;
    }
  }
  return { ranges, single };
}

type ChangedRow = { id: string; changed: string };

/** Each item's outcome from the rows the ack's rewrite returned; the slots it did not change are read once
 * more to tell a repeated ack (same token, same kind) from a lost lease. */
async function ackOutcomes(
  db: Db,
  queue: string,
  mark: string,
  parsed: Parsed[],
  valid: Parsed[],
  changed: ChangedRow[],
): Promise<PackAckOutcome[]> {
  const slotState = new Map<string, string>();
  for (const row of changed) {
    for (const [k, state] of JSON.parse(row.changed) as Array<[number, string]>) {
      slotState.set(row.id + slotChars(k), state === "w" ? "p" : state);
    }
  }
  const missing = valid.filter(({ item }) => !slotState.has(item.id));
  const stored = new Map<string, { state: string; w: string | null; k: string | null }>();
  if (missing.length) {
    const probe = JSON.stringify(missing.map(({ item, place }) => ({ id: item.id, p: place!.pack, s: place!.slot })));
    const rows = await db.all<{ id: string; state: string; w: string | null; k: string | null }>(sql`SELECT id, state,
        le->>'w' AS w, le->>'k' AS k FROM (
        SELECT j.value->>'id' AS id, substr(p.st, (j.value->>'s') + 1, 1) AS state,
          CASE WHEN substr(p.lk, (j.value->>'s') + 1, 1) <> ' ' THEN jsonb_extract(p.leases,
            ${at(charNum(sql`substr(p.lk, (j.value->>'s') + 1, 1)`))}) END AS le
        FROM json_each(${probe}) AS j CROSS JOIN packs p ON p.id = j.value->>'p' AND p.queue = ${queue})`);
    for (const r of rows) if (r.state !== "z") stored.set(r.id, r);
  }
  return parsed.map(({ item, place, dup }): PackAckOutcome => {
    if (dup) return { id: item.id, ok: false, error: "invalid_request" };
    if (!place) return { id: item.id, ok: false, error: "not_found" };
    const state = slotState.get(item.id);
    if (state !== undefined) return { id: item.id, ok: true, state };
    const before = stored.get(item.id);
    if (!before) return { id: item.id, ok: false, error: "not_found" };
    if (before.w === mark && before.k === item.leaseToken)
      return { id: item.id, ok: true, state: before.state === "w" ? "p" : before.state, repeated: true };
    return { id: item.id, ok: false, error: "lease_lost" };
  });
}

/**
 * The call's ranges (`?4`) as their packs hold them now: `uniform` when every slot of the range points at
 * one lease entry, `le` that entry (the one at the range's first slot), `sts` the range's states; `extra`
 * names more columns of the pack.
 */
function rangesCte(extra: SQL = sql``): SQL {
  const lc = sql`substr(p.lk, g0.lo + 1, 1)`;
  return sql`g0 AS MATERIALIZED (SELECT j.value->>'p' AS pid, j.value->>'lo' AS lo, j.value->>'n' AS cnt,
        j.value->>'k' AS tok FROM json_each(${A.ranges}) AS j),
      g AS MATERIALIZED (SELECT g0.*, p.queue, p.type${extra}, substr(p.st, g0.lo + 1, g0.cnt) AS sts,
          substr(p.lk, g0.lo + 1, g0.cnt) = ${rep(lc, sql`g0.cnt`)} AS uniform,
          CASE WHEN ${lc} <> ' ' THEN jsonb_extract(p.leases, ${at(charNum(lc))}) END AS le
        FROM g0 CROSS JOIN packs p ON p.id = g0.pid AND p.queue = ${A.queue})`;
}

/** The slots this ack changed, read after its rewrite: their entry copy carries this call's mark (`a`). A
 * range whose slots all point at one entry reads that entry once; any other range goes slot by slot. */
function changedSlotsSql(mark: string): SQL {
  // MATERIALIZED, so each slot's entry and body are looked up once, not once per histogram bucket.
  return sql`WITH RECURSIVE ${SEQ_CTE}, ${rangesCte(sql`, p.slots AS sl`)},
      i AS MATERIALIZED (
        SELECT j.value->>'p' AS pid, j.value->>'s' AS k, j.value->>'k' AS tok FROM json_each(${A.json}) AS j
        UNION ALL
        SELECT g.pid, g.lo + s.k, g.tok FROM g JOIN seq s ON s.k < g.cnt WHERE NOT g.uniform),
      r AS MATERIALIZED (
        SELECT p.queue, p.type, substr(p.st, i.k + 1, 1) AS state, i.tok,
          jsonb_extract(p.leases, ${at(charNum(sql`substr(p.lk, i.k + 1, 1)`))}) AS le,
          jsonb_extract(p.slots, ${at(sql`i.k`, "st")}) AS started
        FROM i CROSS JOIN packs p ON p.id = i.pid AND substr(p.lk, i.k + 1, 1) <> ' '
        UNION ALL
        SELECT g.queue, g.type, substr(g.sts, s.k + 1, 1), g.tok, g.le, jsonb_extract(g.sl, ${at(sql`g.lo + s.k`, "st")})
        FROM g JOIN seq s ON s.k < g.cnt WHERE g.uniform),
      c AS MATERIALIZED (SELECT queue, type, state, coalesce(started, le->>'t') AS started_at FROM r
        WHERE (le->>'w') = ${mark} AND (le->>'k') = tok AND (le->>'a') = ${A.call})
    SELECT queue, type, state, started_at, ${A.now} - started_at AS run_ms FROM c`;
}

/**
 * A completion of whole ranges (a worker's lease, finished): per pack, the range's slots are checked and
 * rewritten as one substring of each column — all processing, all under one lease entry whose fence holds —
 * and one ended copy of the entry appended. A range that fails any check is left to the per-slot statement
 * (`ackSql`), which takes it slot by slot.
 */
function rangeSql(): SQL {
  const n = R.now;
  const lc = sql`substr(p.lk, g.lo + 1, 1)`;
  return sql`WITH g AS MATERIALIZED (SELECT j.value->>'p' AS pid, j.value->>'lo' AS lo, j.value->>'n' AS cnt,
        j.value->>'k' AS tok FROM json_each(${R.ranges}) AS j),
      hit AS MATERIALIZED (SELECT * FROM (
          SELECT g.*, jsonb_extract(p.leases, ${at(charNum(lc))}) AS le
          FROM g CROSS JOIN packs p ON p.id = g.pid AND p.queue = ${R.queue} AND p.finished_at IS NULL
          WHERE ${lc} <> ' ' AND substr(p.st, g.lo + 1, g.cnt) = ${rep(sql`'r'`, sql`g.cnt`)}
            AND substr(p.lk, g.lo + 1, g.cnt) = ${rep(lc, sql`g.cnt`)})
        WHERE ${fence(sql`'r'`, sql`le`, sql`tok`, n)})
    UPDATE packs SET st = ${splice(sql`st`, sql`hit.lo`, sql`hit.cnt`, rep(sql`'c'`, sql`hit.cnt`))},
      lk = ${splice(sql`lk`, sql`hit.lo`, sql`hit.cnt`, rep(numChar(sql`json_array_length(leases)`), sql`hit.cnt`))},
      leases = jsonb_insert(leases, '$[#]', jsonb_set(hit.le, '$.f', ${n}, '$.w', 'c', '$.a', ${R.call})),
      live = live - hit.cnt,
      next_at = CASE WHEN ready > 0 THEN min(run_at, coalesce(rare_at, run_at)) ELSE rare_at END,
      finished_at = CASE WHEN live - hit.cnt = 0 THEN ${n} END, updated_at = ${n}
    FROM hit
    WHERE packs.id = hit.pid
    RETURNING packs.id AS id`;
}

/** The ack statement (see ackPacks). */
function ackSql(kind: AckKind, config: PackQueueConfig): SQL {
  const n = A.now;
  const mark = MARK[kind];
  const nc =
    kind === "complete"
      ? sql`'c'`
      : kind === "release"
        ? sql`'p'`
        : sql`CASE WHEN coalesce(item->>'perm', 0) = 1 OR a >= max_attempts THEN 'd' ELSE 'w' END`;
  const na = kind === "release" ? sql`max(a - 1, 0)` : sql`a`;
  const needs = kind === "complete" ? sql`json_type(item, '$.r') IS NOT NULL` : sql`1`;
  const wt =
    kind === "fail"
      ? sql`CASE WHEN ${nc} = 'w' THEN ${n} + coalesce(item->>'ra', ${failureBackoff(sql`a`, config.backoff)}) END`
      : sql`NULL`;
  // One slot's body edit (`x.b` the pack's bodies so far, `h` the hit).
  const started = sql`${at(sql`h.k`, "st")}, coalesce(jsonb_extract(x.b, ${at(sql`h.k`, "st")}), h.le->>'t')`;
  const edit =
    kind === "complete"
      ? sql`jsonb_set(x.b, ${at(sql`h.k`, "r")}, h.item->'r')`
      : kind === "release"
        ? sql`jsonb_set(x.b, ${at(sql`h.k`, "t")}, ${n}, ${started})`
        : sql`jsonb_set(x.b, ${at(sql`h.k`, "er")}, jsonb_insert(coalesce(jsonb_extract(x.b, ${at(sql`h.k`, "er")}),
            jsonb('[]')), '$[#]', json_object('attempt', h.a, 'at', ${n}, 'message', h.item->>'m',
            'kind', CASE WHEN coalesce(h.item->>'perm', 0) = 1 THEN 'permanent' ELSE 'error' END)),
          ${at(sql`h.k`, "t")}, h.wt, ${started})`;
  const ended = (le: SQL) => sql`jsonb_set(${le}, '$.f', ${n}, '$.w', ${mark}, '$.a', ${A.call})`;
  // A range this call's range statement completed is not walked again.
  const settled = sql`g.uniform AND g.sts = ${rep(sql`'c'`, sql`g.cnt`)} AND (g.le->>'w') = ${mark}
    AND (g.le->>'k') = g.tok AND (g.le->>'a') = ${A.call}`;
  return sql`WITH RECURSIVE ${SEQ_CTE}, ${rangesCte()},
    items AS MATERIALIZED (SELECT j.value->>'p' AS pid, j.value->>'s' AS k, j.value->>'k' AS tok, j.value AS item
      FROM json_each(${A.json}) AS j
      UNION ALL
      SELECT g.pid, g.lo + s.k, g.tok, json_object('k', g.tok) FROM g JOIN seq s ON s.k < g.cnt WHERE NOT (${settled})),
    h0 AS MATERIALIZED (
      SELECT *, jsonb_extract(leases, ${at(sql`li`)}) AS le FROM (
        SELECT i.*, substr(p.st, i.k + 1, 1) AS ch, ${charNum(sql`substr(p.at, i.k + 1, 1)`)} AS a,
          CASE WHEN substr(p.lk, i.k + 1, 1) <> ' ' THEN ${charNum(sql`substr(p.lk, i.k + 1, 1)`)} END AS li,
          p.leases, p.max_attempts
        FROM items i CROSS JOIN packs p ON p.id = i.pid AND p.queue = ${A.queue} AND p.finished_at IS NULL)
    ),
    hits AS MATERIALIZED (
      SELECT pid, k, item, a, li, le, ${nc} AS nc, ${na} AS na, ${wt} AS wt, ${needs} AS needs,
        dense_rank() OVER (PARTITION BY pid ORDER BY li) AS rank
      FROM h0 WHERE ${fence(sql`ch`, sql`le`, sql`tok`, n)}
    ),
    pk AS MATERIALIZED (
      SELECT pid, count(*) AS cnt, min(k) AS lo, count(DISTINCT li) AS lis, min(nc) AS nc, min(wt) AS wt,
        min(le) AS le, (count(DISTINCT li) = 1 AND count(DISTINCT nc) = 1 AND sum(na <> a) = 0
          AND max(k) - min(k) + 1 = count(*)) AS contiguous
      FROM hits GROUP BY pid
    ),
    gen AS MATERIALIZED (
      SELECT x.pid, group_concat(coalesce(h.nc, substr(p.st, s.k + 1, 1)), '' ORDER BY s.k) AS st,
        group_concat(CASE WHEN h.k IS NULL THEN substr(p.at, s.k + 1, 1) ELSE ${numChar(sql`h.na`)} END, '' ORDER BY s.k) AS at,
        group_concat(CASE WHEN h.k IS NULL THEN substr(p.lk, s.k + 1, 1)
          ELSE ${numChar(sql`json_array_length(p.leases) + h.rank - 1`)} END, '' ORDER BY s.k) AS lk,
        (SELECT group_concat(json(${ended(sql`d.le`)}), ',' ORDER BY d.li)
          FROM (SELECT DISTINCT li, le FROM hits WHERE hits.pid = x.pid) d) AS ents
      FROM pk x CROSS JOIN packs p ON p.id = x.pid JOIN seq s ON s.k < p.n LEFT JOIN hits h ON h.pid = x.pid AND h.k = s.k
      WHERE NOT x.contiguous OR x.lis > 1
      GROUP BY x.pid
    ),
    hb AS MATERIALIZED (SELECT *, row_number() OVER (PARTITION BY pid ORDER BY k) AS rn FROM hits WHERE needs),
    bodies(pid, n, b) AS (
      SELECT p.id, 0, p.slots FROM packs p WHERE p.id IN (SELECT pid FROM hb)
      UNION ALL
      SELECT x.pid, x.n + 1, ${edit} FROM bodies x JOIN hb h ON h.pid = x.pid AND h.rn = x.n + 1
    ),
    body AS MATERIALIZED (SELECT pid, b FROM bodies x WHERE n = (SELECT count(*) FROM hb WHERE hb.pid = x.pid)),
    plan AS MATERIALIZED (
      SELECT *, ${countChar(sql`st`, "p")} AS ready,
        ${countChar(sql`st`, "p")} + ${countChar(sql`st`, "w")} + ${countChar(sql`st`, "r")} AS live FROM (
        SELECT k.pid,
          CASE WHEN k.contiguous THEN ${splice(sql`p.st`, sql`k.lo`, sql`k.cnt`, rep(sql`k.nc`, sql`k.cnt`))} ELSE g.st END AS st,
          CASE WHEN k.contiguous THEN p.at ELSE g.at END AS at,
          CASE WHEN k.contiguous THEN ${splice(sql`p.lk`, sql`k.lo`, sql`k.cnt`, rep(numChar(sql`json_array_length(p.leases)`), sql`k.cnt`))}
            ELSE g.lk END AS lk,
          CASE WHEN k.lis = 1 THEN jsonb_insert(p.leases, '$[#]', ${ended(sql`k.le`)})
            ELSE jsonb(substr(json(p.leases), 1, length(json(p.leases)) - 1) || ',' || g.ents || ']') END AS leases,
          b.b AS slots,
          CASE WHEN k.wt IS NULL THEN p.rare_at ELSE min(coalesce(p.rare_at, k.wt), k.wt) END AS rare_at
        FROM pk k CROSS JOIN packs p ON p.id = k.pid LEFT JOIN gen g ON g.pid = k.pid LEFT JOIN body b ON b.pid = k.pid)
    )
    UPDATE packs SET st = plan.st, at = plan.at, lk = plan.lk, leases = plan.leases, slots = coalesce(plan.slots, packs.slots),
      ready = plan.ready, live = plan.live, rare_at = plan.rare_at,
      next_at = CASE WHEN plan.ready > 0 THEN min(run_at, coalesce(plan.rare_at, run_at)) ELSE plan.rare_at END,
      finished_at = CASE WHEN plan.live = 0 THEN ${n} END, updated_at = ${n}
    FROM plan
    WHERE packs.id = plan.pid
    RETURNING packs.id AS id,
      (SELECT json_group_array(json_array(h.k, h.nc)) FROM hits h WHERE h.pid = packs.id) AS changed`;
}
