import { sql, type SQL } from "drizzle-orm";
import { expiryBackoffMs, type SlotConfig } from "./slot-rules";

/** SQL over a pack's slot columns, as both writes evaluated in SQL state it: the lease of pending slots
 * (lease-sql.ts) and a holder's splice (slot-splice.ts). */

/** How many characters of `col` are one of `chars`. */
function countOf(col: SQL, chars: string[]): SQL {
  let rest = col;
  for (const ch of chars) rest = sql`replace(${rest}, ${sql.raw(`'${ch}'`)}, '')`;
  return sql`(length(${col}) - length(${rest}))`;
}

/** The live slots of a state column `col` (`isLive` of slot-rules.ts: pending, waiting, processing). */
export const liveCountSql = (col: SQL): SQL => countOf(col, ["p", "w", "r"]);

/** The plain pending slots of a state column `col` (a pack's `ready`). */
export const readyCountSql = (col: SQL): SQL => countOf(col, ["p"]);

/** How many attempts' expiry backoffs are handed in: past attempt 31 the backoff's exponent is capped
 * (retry-policy.ts), so every later attempt uses the last entry. */
const BACKOFF_STEPS = 32;

/** The expiry backoff of each attempt (index) under `config` (slot-rules.ts `expiryBackoffMs`), to hand to SQL
 * as a JSON array; an attempt past its end takes its last entry. */
export function expiryBackoffs(config: SlotConfig): number[] {
  return Array.from({ length: BACKOFF_STEPS }, (_, a) => expiryBackoffMs(a, config));
}
