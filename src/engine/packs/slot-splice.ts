import { sql, type SQL } from "drizzle-orm";
import { utf8Bytes } from "../../contracts/json-value";
import type { Located } from "./locate";
import { packWriteSql, type ReadSet } from "./pack-commit";
import { slotAddress, storedBody, type Pack, type SlotBody } from "./pack-row";
import { finishedInWrite, settleDependentsSql } from "./settle-dependents";
import { expiryBackoffs, liveCountSql, readyCountSql } from "./slot-column-sql";
import { isLive, type SlotConfig } from "./slot-rules";
import { encodeBodies, PACK_ROW_BUDGET } from "./spill";

/**
 * The holder's writes (complete, fail, release, extend, heartbeat) as SLOT SPLICES evaluated at write time
 * (docs/design/packs.md, "The lease under contention"): instead of rewriting its pack whole under the pack's
 * `ver` (pack-commit.ts), a holder's batch writes only the slots it holds into the row as the row is when the
 * batch runs — their state and attempts characters, their lease entries (in place) and their bodies — and
 * recomputes the pack's figures in SQL from every slot as it then is. Its guard checks only those slots:
 * each still as read (processing, the same attempts, lease pointer, lease entry and body), which, with the
 * fence held at read time at the same `now`, is the fence at write time. So N holders acking N slots of one
 * pack each commit their first batch, whatever the others did to their own slots meanwhile (the whole-pack
 * guard lost to each of them in turn: up to N rounds).
 *
 * What it writes is what the whole-pack write writes for the same call (test/engine/packs/ack-splice.test.ts
 * holds the two equal, slot by slot): the slots' new values are computed in JavaScript by the same rules
 * (slot-rules.ts, holder-writes.ts), only where they go is chosen at write time; the figures are
 * `packFigures` stated in SQL (`figuresSql`); counters, dependency settlement and answers are those of the
 * JavaScript path (computed from the held slots, which the guard proves unchanged).
 *
 * A pack's write stays whole (the guarded path, retried on a lost race) where a splice cannot say the same:
 * a held slot with spilled fields, or a write that would spill or move a value in or out of `pack_spill`
 * (spill.ts: large results, errors, checkpoints, or a row near PACK_ROW_BUDGET). When a splice's guard fails
 * (the same slot changed between read and write: its own holder's concurrent write, an operator's cancel
 * request, the reaper; or a row grown past the budget), the call is computed again with whole-pack writes.
 */

/** A held slot as the write read it: what its guard compares. */
export interface SlotRead {
  k: number;
  /** Attempts and lease-pointer characters (`at`, `lk`). */
  at: string;
  lk: string;
  /** Its lease entry and its body without the payload (which no holder write changes), as JSON. */
  entry: string;
  body: string;
}

/** A slot's body without its payload: what a splice compares and writes (the payload stays in the row). */
function withoutPayload(body: SlotBody): Omit<SlotBody, "b"> {
  const rest: SlotBody = { ...body };
  delete rest.b;
  return rest;
}

/** Records a held slot as read, before the write changes it. */
export function readSlot(at: Located): SlotRead {
  return {
    k: at.k,
    at: String.fromCharCode(48 + at.slot.a),
    lk: at.pack.readLk?.[at.k] ?? " ",
    entry: JSON.stringify(at.slot.lease),
    body: JSON.stringify(withoutPayload(storedBody(at.slot))),
  };
}

/** Path/value pairs per JSON function call: SQLite builds before 3.49 cap a function's arguments at 127. */
const PAIRS_PER_CALL = 50;

/*
 * A splice's values — positions, characters, lease indexes, the time, the sizes — are bound (in one JSON list
 * per statement), never written into its text: D1 keeps a compiled statement per text, and a text with a slot's
 * position in it was compiled on every call (~0.6 ms to prepare each UPDATE on node:sqlite, two per complete of
 * one slot: docs/design/packs.md, "Statements compiled once"). The guard has one text; an UPDATE one per number
 * of slots it splices.
 */

/** `v.x ->> '$[m].f'`: field `f` of the list's `m`-th slot (the list is bound; `m` is a place in the text). */
const item = (m: number, f: string): SQL => sql.raw(`(v.x ->> '$[${m}].${f}')`);

/** The bytes a splice adds to the pack's `slots`, or null when the pack must be written whole. */
function spliceGrowth(pack: Pack, reads: SlotRead[]): number | null {
  if (reads.some((r) => r.lk === " ")) return null;
  const spilled = [...(pack.spilled?.keys() ?? [])];
  const prefixes = reads.map((r) => `${slotAddress(pack, r.k)}\u0000`);
  if (spilled.some((key) => prefixes.some((p) => key.startsWith(p)))) return null;
  // A write the whole path would spill (a value over SPILL_AT_BYTES, a row over the budget) or unspill.
  if (encodeBodies(pack).statements.length > 0) return null;
  let growth = 0;
  for (const r of reads) growth += utf8Bytes(JSON.stringify(withoutPayload(pack.slots[r.k]!.body))) - utf8Bytes(r.body);
  return growth;
}

/** `terms` joined by `op` as a balanced tree: SQLite refuses an expression deeper than 100 (measured on D1:
 * "Expression tree is too large"), which a chain over 100 slots would be. */
function balanced(terms: SQL[], op: string): SQL {
  if (terms.length === 1) return terms[0]!;
  const half = Math.ceil(terms.length / 2);
  return sql`(${balanced(terms.slice(0, half), op)} ${sql.raw(op)} ${balanced(terms.slice(half), op)})`;
}

/**
 * The guard of the spliced packs, a condition of the batch's guard (pack-commit.ts `guardSql`): each pack
 * there, with room in `slots` under PACK_ROW_BUDGET for what the write adds, and each held slot of it as read
 * — processing, its attempts and lease pointer as read, the entry it points at (its own, or shared by the slots
 * of one lease) and its body without the payload equal to what was read. One primary-key probe per pack (its
 * slots' checks a walk of its list of reads): rows read in proportion to the packs, not the slots. One text
 * whatever it checks.
 */
function guardConditionSql(spliced: Array<{ pack: Pack; reads: SlotRead[]; growth: number }>): SQL {
  const list = JSON.stringify(
    spliced.map(({ pack, reads, growth }) => ({
      id: pack.id,
      g: growth,
      s: reads.map((r) => ({
        k: r.k,
        a: r.at.charCodeAt(0),
        l: r.lk.charCodeAt(0),
        e: JSON.parse(r.entry) as unknown,
        o: JSON.parse(r.body) as unknown,
      })),
    })),
  );
  const k = sql.raw(`(r.value ->> 'k')`);
  const l = sql.raw(`(r.value ->> 'l')`);
  return sql`(SELECT count(*) FROM json_each(${list}) AS g CROSS JOIN packs p ON p.id = g.value ->> 'id'
      WHERE length(p.slots) + (g.value ->> 'g') <= ${sql.raw(String(PACK_ROW_BUDGET))}
        AND (SELECT count(*) FROM json_each(g.value -> 's') AS r
          WHERE substr(p.st, ${k} + 1, 1) = 'r' AND unicode(substr(p.at, ${k} + 1, 1)) = r.value ->> 'a'
            AND unicode(substr(p.lk, ${k} + 1, 1)) = ${l}
            AND p.leases -> ('$[' || (${l} - 48) || ']') = r.value -> 'e'
            AND json_remove(p.slots -> ('$[' || ${k} || ']'), '$.b') = r.value -> 'o'
        ) = json_array_length(g.value -> 's')) = ${spliced.length}`;
}

/** `fn(base, path1, value1, …)` over `pairs`, nested in calls of PAIRS_PER_CALL pairs. */
function chained(fn: string, base: SQL, pairs: Array<[SQL, SQL]>): SQL {
  let out = base;
  for (let from = 0; from < pairs.length; from += PAIRS_PER_CALL) {
    const some = pairs.slice(from, from + PAIRS_PER_CALL).map(([path, value]) => sql`${path}, ${value}`);
    out = sql`${sql.raw(fn)}(${out}, ${sql.join(some, sql`, `)})`;
  }
  return out;
}

/**
 * `packFigures` (pack-row.ts) in SQL over the pack's new columns (`nw`), as CTEs ending in `fig`: `live` and
 * `ready` counted from `st`; `rare_at` the earliest time a live slot other than a plain pending one becomes
 * leasable (`leasableAt`) — a retry or a release (`w`): its own run time; processing (`r`): null when a
 * cancel is requested, else its claim, else its expiry plus the expiry backoff of its attempts (`nw.bo`,
 * computed by slot-rules.ts) below the pack's max attempts, else null — read by a walk over those slots
 * only (`instr` from one to the next: rows in proportion to them, none for the `p` slots or ended ones);
 * `next_at` the pack's run time while a `p` slot is left (a `p` slot is pending at its pack's run time: one
 * with a time of its own is `w`, as lease-sql.ts takes it), else `rare_at`.
 */
function figuresSql(): SQL {
  const rest = sql`substr(w.lv, w.i + 1)`;
  return sql`wr(i, lv) AS (
      SELECT instr(lv, 'r'), lv FROM (SELECT replace(st, 'w', 'r') AS lv FROM nw) WHERE instr(lv, 'r') > 0
      UNION ALL
      SELECT w.i + instr(${rest}, 'r'), w.lv FROM wr w WHERE instr(${rest}, 'r') > 0
    ),
    s1 AS (SELECT wr.i - 1 AS i, substr(nw.st, wr.i, 1) AS c, unicode(substr(nw.at, wr.i, 1)) - 48 AS a,
        CASE WHEN substr(nw.lk, wr.i, 1) <> ' ' THEN nw.leases -> ('$[' || (unicode(substr(nw.lk, wr.i, 1)) - 48) || ']')
        END AS le, nw.slots, nw.run_at, nw.max_attempts, nw.bo
      FROM wr, nw),
    s2 AS (SELECT CASE
        WHEN c = 'w' THEN coalesce(slots ->> ('$[' || i || '].t'), run_at)
        WHEN le IS NULL OR coalesce(slots ->> ('$[' || i || '].cr'), 0) = 1 THEN NULL
        WHEN le ->> 'c' IS NOT NULL THEN le ->> 'c'
        WHEN a < max_attempts THEN (le ->> 'e') + coalesce(json_extract(bo, '$[' || a || ']'), json_extract(bo, '$[#-1]'))
      END AS at FROM s1),
    fig AS (SELECT f.*, CASE WHEN f.ready > 0 THEN coalesce(min(nw.run_at, f.rare_at), nw.run_at) ELSE f.rare_at END
        AS next_at
      FROM nw, (SELECT ${liveCountSql(sql`nw.st`)} AS live, ${readyCountSql(sql`nw.st`)} AS ready,
        (SELECT min(at) FROM s2) AS rare_at FROM nw) AS f)`;
}

/** `col` with the characters at the list's positions `k` (ascending, `n` of them) replaced by its characters
 * `field` (a character code), or the code `code(m)` gives the m-th: one `substr` per piece, its bounds read from
 * the list. */
function spliceChars(col: SQL, n: number, field: string | ((m: number) => SQL)): SQL {
  const parts: SQL[] = [];
  for (let m = 0; m < n; m++) {
    const from = m === 0 ? sql`1` : sql`(${item(m - 1, "k")} + 2)`;
    const code = typeof field === "string" ? item(m, field) : field(m);
    parts.push(sql`substr(${col}, ${from}, ${item(m, "k")} + 1 - ${from})`, sql`char(${code})`);
  }
  parts.push(sql`substr(${col}, ${item(n - 1, "k")} + 2)`);
  return balanced(parts, "||");
}

/**
 * The statement splicing the held slots of `pack` (as the write left them in `pack`) into its row as it is
 * at write time, then the settlement of dependents of the slots it finished (settle-dependents.ts), as the
 * whole write. `finished_at` is set when no slot is left live (the CHECK live > 0 = finished_at IS NULL).
 * Each slot of the bound list: its position `k`, its new state and attempts characters' codes `s`, `a`, its
 * new lease entry `e` (appended, the slot's pointer moved to it), its new body without the payload `n`.
 */
function spliceSql(pack: Pack, reads: SlotRead[], config: SlotConfig, now: number): SQL[] {
  const sorted = [...reads].sort((x, y) => x.k - y.k);
  const list = JSON.stringify(
    sorted.map((r) => {
      const slot = pack.slots[r.k]!;
      return {
        k: r.k,
        s: slot.st.charCodeAt(0),
        a: 48 + slot.a,
        e: slot.lease,
        n: withoutPayload(slot.body),
      };
    }),
  );
  const backoffs = JSON.stringify(expiryBackoffs(config));
  const n = sorted.length;
  const indexes = Array.from({ length: n }, (_, m) => m);
  const path = (m: number, f: string, rest = "") => sql.raw(`('$[' || (v.x ->> '$[${m}].${f}') || ']${rest}')`);
  // Each held slot's new entry appended, its pointer moved to it: an entry may be shared by the slots one lease
  // took from the pack (pack-types.ts `s`), so none is changed in place. What no slot points at any more goes at
  // the pack's next whole write (pack-row.ts `encodeSlots` keeps the entries pointed at).
  const leases = chained(
    "jsonb_insert",
    sql`p.leases`,
    indexes.map((m): [SQL, SQL] => [sql.raw(`'$[#]'`), sql.raw(`json(v.x -> '$[${m}].e')`)]),
  );
  const lk = spliceChars(sql`p.lk`, n, (m) => sql.raw(`48 + json_array_length(p.leases) + ${m}`));
  const slots = chained(
    "jsonb_replace",
    sql`p.slots`,
    indexes.map((m): [SQL, SQL] => [
      path(m, "k"),
      sql`json(CASE WHEN p.slots -> ${path(m, "k", ".b")} IS NULL THEN v.x -> ${sql.raw(`'$[${m}].n'`)}
        ELSE json_set(v.x -> ${sql.raw(`'$[${m}].n'`)}, '$.b', json(p.slots -> ${path(m, "k", ".b")})) END)`,
    ]),
  );
  const st = spliceChars(sql`p.st`, n, "s");
  const at = spliceChars(sql`p.at`, n, "a");
  // Slots of this write that end (completed, dead, cancelled): the pack ends when they are all its live ones
  // (`live` is the count of its live slots, kept by every write; the held ones are live, by the guard).
  const ends = sorted.filter((r) => !isLive(pack.slots[r.k]!));
  const ending = ends.length;
  // Each statement applies only while a slot this write ends is still processing (as the guard found it): the
  // one that comes second finds the first's work done and changes nothing (its `live` gate alone could match
  // the row the first left).
  const unapplied = ending > 0 ? sql` AND substr(p.st, ${ends[0]!.k + 1}, 1) = 'r'` : sql``;
  const update = (finishing: boolean) => sql`WITH RECURSIVE v(x, bo) AS (SELECT ${list}, ${backoffs}),
      nw AS MATERIALIZED (
        SELECT p.id, p.run_at, p.max_attempts, v.bo, ${st} AS st, ${at} AS at, ${lk} AS lk, ${leases} AS leases,
          ${slots} AS slots
        FROM packs p, v WHERE p.id = ${pack.id} AND p.live ${finishing ? sql`=` : sql`<>`} ${ending}${unapplied}
      ),
      ${figuresSql()}
    UPDATE packs SET st = nw.st, at = nw.at, lk = nw.lk, leases = nw.leases, slots = nw.slots, live = fig.live,
      ready = fig.ready, next_at = fig.next_at, rare_at = fig.rare_at, updated_at = ${now},
      ${finishing ? sql`finished_at = coalesce(packs.finished_at, ${now}), ` : sql``}ver = ver + 1
    FROM nw, fig
    WHERE packs.id = nw.id`;
  return [
    update(false),
    ...(ending > 0 ? [update(true)] : []),
    ...settleDependentsSql(finishedInWrite(pack), now, pack),
  ];
}

/**
 * Whether the write holds every slot of `pack` that was live as read: the usual ack of a lease that took the
 * pack whole. No other holder can then write the pack, and no leaser can take from it, so the whole-pack write
 * under `ver` commits in its first round (only an operator's cancel request or the reaper between read and write
 * make it retry) — one plain UPDATE where a splice's is built per slot and its figures walk the slots in SQL
 * (in the bench's profile, docs/benchmarks.md section 2b, most of a served completion's time).
 */
function holdsEveryLiveSlot(pack: Pack, held: number): boolean {
  const st = pack.readSt;
  if (st === undefined) return false;
  let live = 0;
  for (const c of st) if (c === "p" || c === "w" || c === "r") live++;
  return live === held;
}

/**
 * Whether a holder's write of `held` slots of `pack` is to be spliced (`splice`: the write may splice, and it
 * does not hold all the pack's live slots) — decided before the write changes them, so that only the slots of
 * such a pack are recorded for a splice's guard (`readSlot`: two JSON texts per slot, which a pack written
 * whole never reads). A pack to splice is still written whole where the splice cannot say the same
 * (`spliceGrowth`).
 */
export function splicesPack(pack: Pack, held: number, splice: boolean): boolean {
  return splice && held > 0 && !holdsEveryLiveSlot(pack, held);
}

/**
 * The pack writes of a holder's batch and what its guard must check: each pack of `readsOf` (its held slots as
 * read: those `splicesPack` chose) spliced where it qualifies (`spliceGrowth`), every other written whole under
 * its `ver`.
 */
export function holderPackWrites(
  packs: Pack[],
  readsOf: Map<Pack, SlotRead[]>,
  configOf: (pack: Pack) => SlotConfig,
  now: number,
): { read: ReadSet; statements: SQL[] } {
  const whole: Pack[] = [];
  const spliced: Array<{ pack: Pack; reads: SlotRead[]; growth: number }> = [];
  const statements: SQL[] = [];
  for (const pack of packs) {
    const reads = readsOf.get(pack);
    const growth = reads ? spliceGrowth(pack, reads) : null;
    if (growth === null) {
      whole.push(pack);
      statements.push(...packWriteSql(pack, configOf(pack), now));
      continue;
    }
    spliced.push({ pack, reads: reads!, growth });
    statements.push(...spliceSql(pack, reads!, configOf(pack), now));
  }
  const conditions = spliced.length ? [guardConditionSql(spliced)] : [];
  return { read: { packs: whole, conditions }, statements };
}
