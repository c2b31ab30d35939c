import { sql, type SQL } from "drizzle-orm";

/** The figures of a spliced pack (slot-splice.ts) as SQL over its new columns. */

/** How many attempts' expiry backoffs are handed in: past attempt 31 the backoff's exponent is capped
 * (retry-policy.ts), so every later attempt uses the last entry (as lease-sql.ts). */
export const BACKOFF_STEPS = 32;

/** An integer inlined into the statement. */
const int = (n: number): SQL => sql.raw(String(Math.trunc(n)));

/** How many characters of `col` are one of `chars` (as lease-sql.ts). */
function countOf(col: SQL, chars: string[]): SQL {
  let rest = col;
  for (const ch of chars) rest = sql`replace(${rest}, ${sql.raw(`'${ch}'`)}, '')`;
  return sql`(length(${col}) - length(${rest}))`;
}

/** Above every time a slot can hold (ms): stands in for "no time" inside `min`, which is NULL when one of its
 * arguments is. */
const NO_TIME = "9007199254740991";

/** Arguments of one `min` call: SQLite builds before 3.49 cap a function's arguments at 127. */
const TERMS_PER_MIN = 100;

/**
 * When the slot at 0-based position `k` of the pack's new columns (`nw`) becomes leasable, if it is a retry or
 * a release (`w`) or processing (`r`), else NULL (`leasableAt` of slot-rules.ts): a `w` slot at its own run
 * time, else the pack's; an `r` slot NULL when a cancel is requested or it has no lease entry, else its
 * claim, else its expiry plus the expiry backoff of its attempts (`nw.bo`, computed by slot-rules.ts) below
 * the pack's max attempts, else NULL. An expression over the row's columns: no row read per slot.
 */
function leasableAtSql(k: number): SQL {
  const pos = int(k + 1);
  const a = sql`(unicode(substr(nw.at, ${pos}, 1)) - 48)`;
  const le = sql`(nw.leases -> (unicode(substr(nw.lk, ${pos}, 1)) - 48))`;
  return sql`CASE substr(nw.st, ${pos}, 1)
    WHEN 'w' THEN coalesce(nw.slots ->> '$[${int(k)}].t', nw.run_at)
    WHEN 'r' THEN CASE WHEN substr(nw.lk, ${pos}, 1) <> ' ' AND (nw.slots ->> '$[${int(k)}].cr') IS NOT 1
      THEN coalesce(${le} ->> 'c', CASE WHEN ${a} < nw.max_attempts THEN (${le} ->> 'e') + (nw.bo ->> min(${a}, ${int(BACKOFF_STEPS - 1)})) END)
      END
    END`;
}

/** The least of `terms` (none NULL): `min` over at most TERMS_PER_MIN at a time (a one-argument `min` is the
 * aggregate, so a lone term stands alone). */
function leastOf(terms: SQL[]): SQL {
  if (terms.length === 1) return terms[0]!;
  if (terms.length <= TERMS_PER_MIN) return sql`min(${sql.join(terms, sql`, `)})`;
  const groups: SQL[] = [];
  for (let from = 0; from < terms.length; from += TERMS_PER_MIN)
    groups.push(leastOf(terms.slice(from, from + TERMS_PER_MIN)));
  return leastOf(groups);
}

/**
 * `packFigures` (pack-row.ts) in SQL over the pack's new columns (`nw`, one row), as a CTE `fig`: `live` and
 * `ready` counted from `st`; `rare_at` the earliest time a live slot other than a plain pending one becomes
 * leasable — the least of `leasableAtSql` over the pack's `n` positions, one `min` over the row (its slots are
 * not walked: a walk's rows are rows read, in proportion to the pack, where a holder's write is of a few
 * slots); `next_at` the pack's run time while a `p` slot is left (a `p` slot is pending at its pack's run
 * time: one with a time of its own is `w`, as lease-sql.ts takes it), else `rare_at`.
 */
export function figuresSql(n: number): SQL {
  const terms = Array.from({ length: n }, (_, k) => sql`coalesce(${leasableAtSql(k)}, ${sql.raw(NO_TIME)})`);
  return sql`fig AS (SELECT f.*, CASE WHEN f.ready > 0 THEN coalesce(min(nw.run_at, f.rare_at), nw.run_at) ELSE f.rare_at END
        AS next_at
      FROM nw, (SELECT ${countOf(sql`nw.st`, ["p", "w", "r"])} AS live, ${countOf(sql`nw.st`, ["p"])} AS ready,
        nullif(${leastOf(terms)}, ${sql.raw(NO_TIME)}) AS rare_at FROM nw) AS f)`;
}
