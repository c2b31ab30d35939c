/**
 * The packed task store of the packs prototype (docs/design/packs.md): one row holds up to PACK_SLOTS tasks
 * of one queue, type, priority, run_at and max_attempts. Bench only — nothing in src/ reads these tables.
 * Applied after migrations/ by bench/workerd-host.ts, beside the baseline's jobs table.
 *
 * The hot per-task state lives in fixed-width text, one character per slot, so a lease or an ack finds and
 * changes its slots with instr/substr instead of reading every slot's JSON:
 * - `st` the slot's state: p pending (due at the pack's run_at), w waiting for a retry (due at its body's
 *   `t`), r processing, c completed, d dead, z never created (its dedupe key was held);
 * - `at` its attempts, as char(48 + attempts);
 * - `lk` which entry of `leases` the slot's current or last lease is, as char(48 + index), or a space;
 * - `leases` a JSONB array of lease entries, appended to, never reordered (a slot points at one by index):
 *   k token, e expiry (ms), c claim_by (ms) or null, h holder, v length (s), t leased at (ms); an ack copies
 *   its slots' entry with f (ended at, ms) and w (the kind: c complete, f fail, r release) and points them at
 *   the copy, so a repeated ack is recognised and a finished task shows when it ended;
 * - `slots` a JSONB array of the bodies, written at enqueue and touched only by the rare paths (a failure's
 *   error and retry time, a result, a lease taken over): b payload, g group, d dedupe key, t run_at of a
 *   retry, st first started (ms), er errors, r result, p progress. LAST column: SQLite keeps a large value in
 *   overflow pages, and reading a column stored after it walks them.
 * - `rare_at` no later than the earliest time a slot other than `p` becomes leasable (a retry due, a lapsed
 *   lease), or null: until then a lease takes `p` slots by string operations alone (the fast path).
 *
 * Rows written, as D1 bills them (every index entry inserted is another row):
 * - `packs` is WITHOUT ROWID: the primary key is the table, an insert is 1 row;
 * - one partial index over live packs, keyed on columns no lease or ack changes, so a lease or an ack
 *   rewrites one row per pack (not per task) and no index entry;
 * - `pack_keys` holds a row per task enqueued with a dedupe key (an index cannot reach into a JSON array).
 */
export const PACKS_SCHEMA = [
  `CREATE TABLE IF NOT EXISTS packs (
    id TEXT PRIMARY KEY NOT NULL,
    queue TEXT NOT NULL,
    type TEXT NOT NULL,
    priority INTEGER NOT NULL,
    run_at INTEGER NOT NULL,
    max_attempts INTEGER NOT NULL,
    next_at INTEGER,
    rare_at INTEGER,
    n INTEGER NOT NULL,
    live INTEGER NOT NULL,
    ready INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    finished_at INTEGER,
    st TEXT NOT NULL,
    at TEXT NOT NULL,
    lk TEXT NOT NULL,
    leases BLOB NOT NULL,
    slots BLOB NOT NULL,
    CHECK ((live > 0) = (finished_at IS NULL))
  ) WITHOUT ROWID`,
  `CREATE INDEX IF NOT EXISTS packs_live ON packs (queue, priority DESC, run_at, id) WHERE finished_at IS NULL`,
  `CREATE TABLE IF NOT EXISTS pack_keys (
    queue TEXT NOT NULL,
    dedupe_key TEXT NOT NULL,
    task_id TEXT NOT NULL,
    PRIMARY KEY (queue, dedupe_key)
  ) WITHOUT ROWID`,
];

/**
 * Most tasks in one pack: MAX_BATCH (src/contracts/limits.ts), so one full lease is one pack and one row
 * rewritten; a larger pack would only make every lease and ack rewrite more bytes for the same rows billed.
 */
export const PACK_SLOTS = 100;

/**
 * Most bytes of slot JSON a pack is cut at when enqueued. D1 allows 2 MB per row; a pack's slots also grow
 * with results and errors after enqueue, and every lease or ack of one task rewrites the whole row — the
 * same 1 MiB as MAX_ENQUEUE_CHUNK_BYTES, i.e. no pack is bigger than one enqueue statement's JSON today.
 */
export const PACK_MAX_BYTES = 1024 * 1024;

/** Crockford base32, as ULIDs use it: a slot is two characters at the end of its task's id. */
export const B32 = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/** A pack id is 24 characters; task k of it is `packId + slotChars(k)` — a 26-character ULID-shaped id. */
export function slotChars(k: number): string {
  return B32[Math.floor(k / 32)]! + B32[k % 32]!;
}

/** (pack id, slot) of a task id made by `slotChars`, or null when it is not one. */
export function packOf(taskId: string): { pack: string; slot: number } | null {
  if (taskId.length !== 26) return null;
  const hi = B32.indexOf(taskId[24]!);
  const lo = B32.indexOf(taskId[25]!);
  if (hi < 0 || lo < 0) return null;
  return { pack: taskId.slice(0, 24), slot: hi * 32 + lo };
}
