/**
 * SQL over one slot of a pack (docs/design/packs.md): the slot is a JSON object inside the pack's `slots`
 * array (stored as SQLite's binary JSONB, so a slot's fields are read without parsing text), and these
 * fragments read and rewrite it as today's engine reads and rewrites a `tasks` row — the same leasability
 * (src/engine/redelivery.ts), the same fence (src/engine/ack.ts `leaseFenceSql`), the same retry policy
 * (src/engine/retry-policy.ts), per slot. Each takes `v`, the SQL of the slot (a JSONB blob).
 *
 * Slot keys (short: they are stored once per task): s state (p pending, r processing, c completed, d dead,
 * x cancelled, z never created — its dedupe key was held), a attempts, t run_at, x max_attempts, y type,
 * b payload, g group, d dedupe_key, th then, k lease token, h holder, e lease expiry, v lease length (s),
 * c claim_by, o took over an expired lease, q cancel requested, w acked_with, p progress, m progress
 * message, cp checkpoint, r result, er errors, st started_at, f finished_at, u updated_at.
 *
 * Times are integer ms; `now` and the queue's backoff are inlined as integers the prototype computed itself.
 */
import { sql, type SQL } from "drizzle-orm";
import { BACKOFF_JITTER } from "../src/contracts/limits";

/** Largest backoff exponent, as src/engine/retry-policy.ts: 2^30 × any sane base exceeds every cap. */
const MAX_BACKOFF_EXPONENT = 30;
const JITTER_PER_MILLE = Math.round(BACKOFF_JITTER * 1000);

/** An integer computed by the prototype (a time, a count), inlined: D1 allows 100 bound parameters. */
export const int = (n: number): SQL => sql.raw(String(Math.trunc(n)));

/** The queue's backoff, in ms (read once per statement by the caller). */
export interface Backoff {
  baseMs: number;
  capMs: number;
}

const expiryBackoff = (v: SQL, b: Backoff) =>
  sql`min(${int(b.capMs)}, ${int(b.baseMs)} * (1 << min(max((${v}->>'a') - 1, 0), ${int(MAX_BACKOFF_EXPONENT)})))`;

/** A failure's backoff: the expiry backoff × jitter in [1 − BACKOFF_JITTER, 1], as retry-policy.ts. */
const failureBackoff = (v: SQL, b: Backoff) =>
  sql`(${expiryBackoff(v, b)} * (${int(1000 - JITTER_PER_MILLE)} + (random() & 2147483647) % ${int(JITTER_PER_MILLE + 1)}) / 1000)`;

/** A provisional lease nobody claimed by `now`: taken over with the attempt refunded. */
export const unclaimed = (v: SQL, now: number) =>
  sql`((${v}->>'s') = 'r' AND (${v}->>'c') IS NOT NULL AND (${v}->>'c') <= ${int(now)})`;

/** When the slot becomes leasable (ms), or NULL: redelivery.ts's `leasableAtSql`, per slot. */
export const leasableAt = (v: SQL, b: Backoff) => sql`CASE ${v}->>'s'
    WHEN 'p' THEN ${v}->>'t'
    WHEN 'r' THEN CASE
      WHEN (${v}->>'q') = 1 THEN NULL
      WHEN (${v}->>'c') IS NOT NULL THEN ${v}->>'c'
      WHEN (${v}->>'a') < (${v}->>'x') THEN (${v}->>'e') + ${expiryBackoff(v, b)}
      ELSE NULL END
    ELSE NULL END`;

export const leasable = (v: SQL, now: number, b: Backoff) => sql`(${leasableAt(v, b)}) <= ${int(now)}`;

/** The lease fence of one slot: processing, under this token, not expired, a provisional lease claimed in time. */
export const fence = (v: SQL, token: SQL, now: number) =>
  sql`((${v}->>'s') = 'r' AND (${v}->>'k') = ${token} AND (${v}->>'e') > ${int(now)} AND ((${v}->>'c') IS NULL OR (${v}->>'c') > ${int(now)}))`;

/** A slot leased by this statement (`leasable` held): the lease.ts UPDATE's SET, per slot. */
export function leasedSlot(
  v: SQL,
  o: { now: number; token: string; holder: string | null; vtS: number; provisionalMs: number | null },
): SQL {
  const expires = o.now + o.vtS * 1000;
  const takesOver = sql`((${v}->>'s') = 'r' AND NOT ${unclaimed(v, o.now)})`;
  return sql`jsonb_set(${v},
    '$.s', 'r',
    '$.a', CASE WHEN ${unclaimed(v, o.now)} THEN ${v}->>'a' ELSE (${v}->>'a') + 1 END,
    '$.er', jsonb(CASE WHEN ${takesOver}
      THEN jsonb_insert(${v}->'er', '$[#]', json_object('attempt', ${v}->>'a', 'at', ${v}->>'e',
        'message', 'lease expired', 'kind', 'lease_expired'))
      ELSE ${v}->'er' END),
    '$.k', ${o.token}, '$.h', ${o.holder}, '$.e', ${int(expires)}, '$.v', ${int(o.vtS)},
    '$.c', ${o.provisionalMs === null ? sql`NULL` : int(Math.min(o.now + o.provisionalMs, expires))},
    '$.o', CASE WHEN ${takesOver} THEN 1 ELSE 0 END,
    '$.st', coalesce(${v}->>'st', ${int(o.now)}),
    '$.u', ${int(o.now)})`;
}

/** What an ack does to a fenced slot. `i` is the item (JSON text) the slot was matched with. */
export type AckKind = "complete" | "fail" | "release";

/** The holder's write that ends the lease, per kind: complete.ts, fail.ts (+ retry-policy.ts), release.ts. */
export function ackedSlot(kind: AckKind, v: SQL, i: SQL, now: number, b: Backoff): SQL {
  const n = int(now);
  const cancel = sql`coalesce(${v}->>'q', 0) = 1`;
  const ended = (set: SQL) =>
    sql`jsonb_remove(jsonb_set(${v}, ${set}, '$.w', ${kind + ":"} || (${i}->>'k'), '$.u', ${n}), '$.k', '$.e', '$.c')`;
  if (kind === "complete") {
    return ended(sql`'$.s', CASE WHEN ${cancel} THEN 'x' ELSE 'c' END,
      '$.r', CASE WHEN ${cancel} THEN NULL ELSE json(${i}->'r') END,
      '$.p', CASE WHEN ${cancel} THEN ${v}->>'p' ELSE 100 END,
      '$.f', ${n}`);
  }
  if (kind === "release") {
    return ended(sql`'$.s', CASE WHEN ${cancel} THEN 'x' ELSE 'p' END,
      '$.a', max((${v}->>'a') - 1, 0), '$.t', ${n},
      '$.f', CASE WHEN ${cancel} THEN ${n} ELSE NULL END`);
  }
  const permanent = sql`coalesce(${i}->>'perm', 0) = 1`;
  const retries = sql`(NOT ${cancel} AND NOT ${permanent} AND (${v}->>'a') < (${v}->>'x'))`;
  return ended(sql`'$.s', CASE WHEN ${cancel} THEN 'x' WHEN ${permanent} OR (${v}->>'a') >= (${v}->>'x') THEN 'd' ELSE 'p' END,
    '$.t', CASE WHEN ${retries} THEN ${n} + coalesce(${i}->>'ra', ${failureBackoff(v, b)}) ELSE ${v}->>'t' END,
    '$.f', CASE WHEN ${retries} THEN NULL ELSE ${n} END,
    '$.er', jsonb_insert(${v}->'er', '$[#]', json_object('attempt', ${v}->>'a', 'at', ${n},
      'message', ${i}->>'m', 'kind', CASE WHEN ${permanent} THEN 'permanent' ELSE 'error' END))`);
}

/** The pack columns a view shows, as SQL (the `packs` row, or the same columns carried through a CTE). */
export interface PackColumns {
  id: SQL;
  queue: SQL;
  priority: SQL;
  createdAt: SQL;
}

export const PACKS_ROW: PackColumns = {
  id: sql`packs.id`,
  queue: sql`packs.queue`,
  priority: sql`packs.priority`,
  createdAt: sql`packs.created_at`,
};

/** A slot's task id: its pack's id and the slot's index in two base32 characters (bench/packs-schema.ts). */
export function slotIdSql(packId: SQL, key: SQL): SQL {
  const b32 = sql.raw(`'0123456789ABCDEFGHJKMNPQRSTVWXYZ'`);
  return sql`${packId} || substr(${b32}, (${key}) / 32 + 1, 1) || substr(${b32}, (${key}) % 32 + 1, 1)`;
}

/**
 * A slot of `json_each(p.slots) AS s` converted ONCE into a JSONB blob: every field read after that is a
 * lookup in the blob, not a parse of the slot's text. D1 refuses
 * `jsonb_each`, and `json_each` over the stored JSONB hands each slot out as text; selected into a
 * MATERIALIZED CTE, the conversion runs once per slot. (Copying each slot out with `jsonb_extract(p.slots,
 * '$[k]')` instead, never rendering text, was slower in a smoke run of the burn-down.)
 */
export const slotBlobSql = sql`jsonb(s.value)`;

/** A time (ms) rendered as toIso renders it (src/engine/task-row.ts `isoSql`), or NULL. */
const iso = (ms: SQL) => sql`strftime('%Y-%m-%dT%H:%M:%fZ', (${ms}) / 1000.0, 'unixepoch')`;

/**
 * A leased slot's LeasedTaskView (src/contracts/task.ts) as JSON text, built by SQLite like
 * `leasedViewJsonSql`: the same fields in the same order. The pack row is `packs` (a slot's own
 * `json_each` has an `id` column too, so every pack column is qualified), `key` the slot's index.
 */
export function slotViewSql(v: SQL, key: SQL, pack: PackColumns = PACKS_ROW): SQL {
  return sql`json_object(
    'id', ${slotIdSql(pack.id, key)},
    'queue', ${pack.queue}, 'type', ${v}->>'y', 'state', CASE ${v}->>'s' WHEN 'r' THEN 'processing' WHEN 'p' THEN 'pending'
      WHEN 'c' THEN 'completed' WHEN 'd' THEN 'dead' ELSE 'cancelled' END,
    'priority', ${pack.priority},
    'errors', json((SELECT json_group_array(json_set(e.value, '$.at', ${iso(sql`e.value->>'at'`)}))
      FROM json_each(${v}->'er') AS e)),
    'attempts', ${v}->>'a', 'max_attempts', ${v}->>'x', 'run_at', ${iso(sql`${v}->>'t'`)},
    'lease_holder', ${v}->>'h', 'lease_expires_at', ${iso(sql`${v}->>'e'`)}, 'claim_by', ${iso(sql`${v}->>'c'`)},
    'cancel_requested', json(CASE WHEN (${v}->>'q') = 1 THEN 'true' ELSE 'false' END),
    'dedupe_key', ${v}->>'d', 'group', ${v}->>'g', 'progress', ${v}->>'p', 'progress_message', ${v}->>'m',
    'created_at', ${iso(pack.createdAt)}, 'updated_at', ${iso(sql`${v}->>'u'`)},
    'started_at', ${iso(sql`${v}->>'st'`)}, 'finished_at', ${iso(sql`${v}->>'f'`)},
    'lease_token', ${v}->>'k',
    'payload', ${v}->'b', 'result', ${v}->'r', 'checkpoint', ${v}->'cp', 'then', ${v}->'th')`;
}
