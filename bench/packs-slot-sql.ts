/**
 * SQL over the slots of a pack (docs/design/packs.md, bench/packs-schema.ts): the hot state of slot k is
 * character k+1 of the pack's fixed-width columns (`st` state, `at` attempts, `lk` lease entry), its lease is
 * an entry of the `leases` JSONB array, and its body is element k of the `slots` JSONB array. These fragments
 * read them as today's engine reads a `tasks` row — the same leasability (src/engine/redelivery.ts), the
 * same fence (src/engine/ack.ts), the same backoff (src/engine/retry-policy.ts) — per slot.
 *
 * Times are integer ms. The hot statements (lease, acks) name their per-call values (now, the JSON of the
 * items, queue, token, …) as numbered parameters (`arg`, `numbered`), so their text is the same on every
 * call and the database reuses the compiled statement; the queue's backoff, fixed per queue, is inlined.
 */
import { sql, type SQL } from "drizzle-orm";
import { SQLiteAsyncDialect } from "drizzle-orm/sqlite-core";
import type { Db } from "../src/db/client";
import { BACKOFF_JITTER } from "../src/contracts/limits";
import { DEFAULT_QUEUE_CONFIG } from "../src/engine/queue-config";
import { PACK_SLOTS } from "./packs-schema";

/** Largest backoff exponent, as src/engine/retry-policy.ts: 2^30 × any sane base exceeds every cap. */
const MAX_BACKOFF_EXPONENT = 30;
const JITTER_PER_MILLE = Math.round(BACKOFF_JITTER * 1000);

/** An integer computed by the prototype (a time, a count), inlined: D1 allows 100 bound parameters. */
export const int = (n: number): SQL => sql.raw(String(Math.trunc(n)));

/** A statement's own parameter number n (`?n`): bound once, read wherever the statement names it. */
export const arg = (n: number): SQL => sql.raw(`?${n}`);

const dialect = new SQLiteAsyncDialect();

/** Statements built by `numbered`, by key: the text and the values `sql` templates bound. */
const built = new Map<string, { text: string; params: unknown[] }>();

/** How many built statements `numbered` keeps: a few kinds × queue backoffs × the current minute. */
const BUILT_KEEP = 64;

/**
 * A D1 statement whose text names its own parameters `args` as ?1, ?2, … (`arg`), so the text is the same
 * on every call and the database reuses its compiled statement; parameters bound the usual way (`${x}` in a
 * `sql` template, e.g. by src/engine/counters.ts) are numbered after them. No `?` appears in the
 * prototype's SQL text other than as a parameter.
 *
 * `build` runs once per `key`, which must name everything it reads (the statement's kind, the queue's
 * backoff, the counters' minute): composing the statement with drizzle's `sql` and rendering it took about
 * as long as running it on a small lease (bench/packs-lease.ts, profiled on node:sqlite).
 */
export function numbered(db: Db, key: string, build: () => SQL, args: unknown[]): D1PreparedStatement {
  let made = built.get(key);
  if (!made) {
    const { sql: text, params } = dialect.sqlToQuery(build());
    let next = args.length;
    made = { text: text.replace(/\?(?!\d)/g, () => `?${++next}`), params };
    if (built.size >= BUILT_KEEP) built.clear();
    built.set(key, made);
  }
  return db.$client.prepare(made.text).bind(...args, ...made.params);
}

/** The queue's backoff, in ms (read once per statement by the caller). */
export interface Backoff {
  baseMs: number;
  capMs: number;
}

/** The queue's settings a statement needs, read once per call (the prototype keeps them constant). */
export interface PackQueueConfig {
  maxAttempts: number;
  visibilityS: number;
  backoff: Backoff;
}

export const DEFAULT_PACK_CONFIG: PackQueueConfig = {
  maxAttempts: DEFAULT_QUEUE_CONFIG.max_attempts,
  visibilityS: DEFAULT_QUEUE_CONFIG.visibility_timeout_s,
  backoff: { baseMs: DEFAULT_QUEUE_CONFIG.backoff_base_s * 1000, capMs: DEFAULT_QUEUE_CONFIG.backoff_cap_s * 1000 },
};

/** `n` copies of the one-character text `ch` (SQLite has no repeat()): n zero bytes in hex, each "00" swapped. */
export const rep = (ch: SQL, n: SQL): SQL => sql`replace(hex(zeroblob(${n})), '00', ${ch})`;

/** Character k (0-based) of a fixed-width column. */
export const charAt = (col: SQL, k: SQL): SQL => sql`substr(${col}, (${k}) + 1, 1)`;

/** A small integer stored as one character (attempts, a lease entry's index): char(48 + n) and back. */
export const numChar = (n: SQL): SQL => sql`char(48 + (${n}))`;
export const charNum = (ch: SQL): SQL => sql`(unicode(${ch}) - 48)`;

/** `col` with the `len` characters from k replaced by `text`. */
export const splice = (col: SQL, k: SQL, len: SQL, text: SQL): SQL =>
  sql`(substr(${col}, 1, ${k}) || ${text} || substr(${col}, (${k}) + (${len}) + 1))`;

/** How many characters of `col` are `ch`. */
export const countChar = (col: SQL, ch: string): SQL =>
  sql`(length(${col}) - length(replace(${col}, ${sql.raw(`'${ch}'`)}, '')))`;

/** A JSON path to element k of an array, or to one key of it. */
export const at = (k: SQL, key?: string): SQL => sql`('$[' || (${k}) || ']${sql.raw(key ? `.${key}` : "")}')`;

/** The slots 0..PACK_SLOTS-1 as a table `seq(k)`, to walk a pack's slots on the rare paths. */
export const SEQ_CTE = sql.raw(
  `seq(k) AS (VALUES ${Array.from({ length: PACK_SLOTS }, (_, k) => `(${k})`).join(", ")})`,
);

/** The expiry backoff after attempt `a` (1-based), as retry-policy.ts. */
export const expiryBackoff = (a: SQL, b: Backoff) =>
  sql`min(${int(b.capMs)}, ${int(b.baseMs)} * (1 << min(max((${a}) - 1, 0), ${int(MAX_BACKOFF_EXPONENT)})))`;

/** A failure's backoff: the expiry backoff × jitter in [1 − BACKOFF_JITTER, 1], as retry-policy.ts. */
export const failureBackoff = (a: SQL, b: Backoff) =>
  sql`(${expiryBackoff(a, b)} * (${int(1000 - JITTER_PER_MILLE)} + (random() & 2147483647) % ${int(JITTER_PER_MILLE + 1)}) / 1000)`;

/**
 * When a slot becomes leasable (ms), or NULL, from its state `ch`, attempts `a`, lease entry `le` (a JSONB
 * blob, for `r`), retry time `wt` (for `w`) and the pack's run_at and max_attempts: redelivery.ts's
 * `leasableAtSql`, per slot. An unclaimed provisional lease is leasable at its claim time.
 */
export const leasableAt = (s: { ch: SQL; a: SQL; le: SQL; wt: SQL; runAt: SQL; maxAttempts: SQL }, b: Backoff) =>
  sql`CASE ${s.ch}
    WHEN 'p' THEN ${s.runAt}
    WHEN 'w' THEN ${s.wt}
    WHEN 'r' THEN CASE WHEN (${s.le}->>'c') IS NOT NULL THEN ${s.le}->>'c'
      WHEN ${s.a} < ${s.maxAttempts} THEN (${s.le}->>'e') + ${expiryBackoff(s.a, b)} END
    END`;

/** The lease fence of one slot: processing, its entry under this token, not expired, claimed in time. */
export const fence = (ch: SQL, le: SQL, token: SQL, now: SQL | number) => {
  const t = typeof now === "number" ? int(now) : now;
  return sql`(${ch} = 'r' AND (${le}->>'k') = ${token} AND (${le}->>'e') > ${t} AND ((${le}->>'c') IS NULL OR (${le}->>'c') > ${t}))`;
};

/** A slot's task id: its pack's id and the slot's index in two base32 characters (bench/packs-schema.ts). */
export function slotIdSql(packId: SQL, key: SQL): SQL {
  const b32 = sql.raw(`'0123456789ABCDEFGHJKMNPQRSTVWXYZ'`);
  return sql`${packId} || substr(${b32}, (${key}) / 32 + 1, 1) || substr(${b32}, (${key}) % 32 + 1, 1)`;
}

/** A time (ms) rendered as toIso renders it (src/engine/task-row.ts `isoSql`), or NULL. */
export const iso = (ms: SQL) => sql`strftime('%Y-%m-%dT%H:%M:%fZ', (${ms}) / 1000.0, 'unixepoch')`;

/** What a slot's view is built from: the pack's columns, the slot's state, attempts, entry and body. */
export interface SlotParts {
  packId: SQL;
  queue: SQL;
  type: SQL;
  priority: SQL;
  maxAttempts: SQL;
  runAt: SQL;
  createdAt: SQL;
  k: SQL;
  ch: SQL;
  a: SQL;
  /** The slot's lease entry (JSONB blob) or NULL. */
  le: SQL;
  /** The slot's body (JSONB blob). */
  sb: SQL;
}

/**
 * A slot's task view (src/contracts/task.ts's LeasedTaskView, `leasedViewJsonSql`'s fields in its order) as
 * JSON text built by SQLite. The lease token shows only while the slot is processing.
 */
export function slotViewSql(s: SlotParts): SQL {
  const processing = sql`(${s.ch} = 'r')`;
  return sql`json_object(
    'id', ${slotIdSql(s.packId, s.k)},
    'queue', ${s.queue}, 'type', ${s.type}, 'state', CASE ${s.ch} WHEN 'r' THEN 'processing' WHEN 'p' THEN 'pending'
      WHEN 'w' THEN 'pending' WHEN 'c' THEN 'completed' WHEN 'd' THEN 'dead' ELSE 'cancelled' END,
    'priority', ${s.priority},
    'errors', CASE WHEN (${s.sb}->'er') IS NULL THEN json('[]') ELSE json((SELECT json_group_array(json_set(e.value,
      '$.at', ${iso(sql`e.value->>'at'`)})) FROM json_each(${s.sb}->'er') AS e)) END,
    'attempts', ${s.a}, 'max_attempts', ${s.maxAttempts},
    'run_at', ${iso(sql`coalesce(${s.sb}->>'t', ${s.runAt})`)},
    'lease_holder', CASE WHEN ${processing} THEN ${s.le}->>'h' END,
    'lease_expires_at', CASE WHEN ${processing} THEN ${iso(sql`${s.le}->>'e'`)} END,
    'claim_by', CASE WHEN ${processing} THEN ${iso(sql`${s.le}->>'c'`)} END,
    'cancel_requested', json('false'),
    'dedupe_key', ${s.sb}->>'d', 'group', ${s.sb}->>'g',
    'progress', CASE WHEN ${s.ch} = 'c' THEN 100 ELSE ${s.sb}->>'p' END, 'progress_message', ${s.sb}->>'m',
    'created_at', ${iso(s.createdAt)}, 'updated_at', ${iso(sql`coalesce(${s.le}->>'f', ${s.le}->>'t', ${s.createdAt})`)},
    'started_at', ${iso(sql`coalesce(${s.sb}->>'st', ${s.le}->>'t')`)},
    'finished_at', CASE WHEN ${s.ch} IN ('c', 'd', 'x') THEN ${iso(sql`${s.le}->>'f'`)} END,
    'lease_token', CASE WHEN ${processing} THEN ${s.le}->>'k' END,
    'payload', ${s.sb}->'b', 'result', ${s.sb}->'r', 'checkpoint', ${s.sb}->'cp', 'then', ${s.sb}->'th')`;
}
