/**
 * The packed task store of the packs prototype (docs/design/packs.md): one row holds up to PACK_SLOTS tasks
 * of one queue, one priority and one run_at. Bench only — nothing in src/ reads these tables. Applied after
 * migrations/ by bench/workerd-host.ts, beside the baseline's jobs table.
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
    priority INTEGER NOT NULL,
    run_at INTEGER NOT NULL,
    next_at INTEGER,
    n INTEGER NOT NULL,
    live INTEGER NOT NULL,
    ready INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    finished_at INTEGER,
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
