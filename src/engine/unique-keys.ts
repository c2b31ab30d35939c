import { sql, type SQL } from "drizzle-orm";
import { batchAll, type Db } from "../db/client";
import { KEY_PRUNE_WINDOW } from "../contracts/limits";
import type { TaskState } from "../contracts/states";

/**
 * Uniqueness over time (docs/uniqueness-and-expiry.md): a task enqueued with a key of one of three modes, kept
 * in `idempotency_keys` (queue, mode, key) -> the task that holds it. Each mode's keys are its own.
 *
 * - idempotency: within `window` of the task that claimed the key, an enqueue with it makes nothing and is
 *   answered with that task (live or finished); after the window, or once that task is gone (pruned), the
 *   key is claimed again by a new task.
 * - debounce: while the key's task has not started, an enqueue with it replaces that task's payload and moves
 *   its run time to `now + window` (answered with it); otherwise a new task claims the key, run at
 *   `now + window`.
 * - singleton: while the key's task is live and has not started, an enqueue with it is answered with it (`skip`)
 *   or replaces its payload (`replace`); while it runs (started, live), `skip` answers the running one and
 *   `replace` makes a new task queued behind it (`after_id`: not leased until it finished); once it finished,
 *   a new task claims the key.
 *
 * Atomic: an enqueue's keyed rows go through these statements in the insert's own D1 batch (one transaction),
 * in this order — replace what is replaced, claim the keys, insert the rows whose key now names them
 * (`keyedInsertGuardSql`), read back the task each key names — so concurrent enqueues of one key make one task
 * (D1 runs one batch at a time per database; a partitioned queue places a key's tasks on one partition:
 * src/shards/queue-route.ts). Cost: one row written per key claimed (the table is WITHOUT ROWID); a repeat
 * answered from the key writes nothing; a debounce or singleton replace writes the task's row (and, for a
 * debounce, its live index entry: run_at moves).
 */

/** What these statements read of an enqueue's row (src/engine/enqueue-rows.ts's InsertRow). */
interface InsertRow {
  /** The row's place in the call. */
  i: number;
  id: string;
  /** The row as the insert reads it, its key at `$.unique`. */
  json: string;
  unique: UniqueJson | null;
}

/** The three modes, as stored. */
export type UniqueMode = "idempotency" | "debounce" | "singleton";

/** A task's key, as the engine takes it (the API's `idempotency`, `debounce` or `singleton`). */
export interface UniqueKey {
  mode: UniqueMode;
  key: string;
  /** idempotency, debounce: the window (ms). */
  windowMs?: number;
  /** singleton: what an enqueue does while the key's task runs (default skip). */
  whileRunning?: "skip" | "replace";
}

/** A keyed row's unique part, as the statements read it from the row's JSON (`$.unique`). */
export interface UniqueJson {
  mode: UniqueMode;
  key: string;
  /** When the claim ends: idempotency, the window's end; debounce, the run time; singleton, now. */
  expires_at: number;
  replace: boolean;
}

/** The key a task carries, as its row's JSON holds it. */
export function uniqueJson(unique: UniqueKey, now: number): UniqueJson {
  const window = unique.windowMs ?? 0;
  return {
    mode: unique.mode,
    key: unique.key,
    expires_at: unique.mode === "singleton" ? now : now + window,
    replace: unique.mode === "debounce" || unique.whileRunning === "replace",
  };
}

/** The live task a key row names has not started yet (pending, never leased). */
const heldNotStarted = (taskId: string) =>
  sql.raw(`EXISTS (SELECT 1 FROM tasks t
  WHERE t.id = ${taskId} AND t.finished_at IS NULL AND t.started_at IS NULL)`);
const heldLive = (taskId: string) =>
  sql.raw(`EXISTS (SELECT 1 FROM tasks t WHERE t.id = ${taskId} AND t.finished_at IS NULL)`);

/** When a key row may be claimed by a new task, per mode (and singleton policy). */
function claimableSql(mode: UniqueMode, replace: boolean, now: number, ids: string): SQL {
  const held = "idempotency_keys.task_id";
  if (mode === "idempotency") {
    // A key whose task is gone (pruned) is free — unless this very statement claimed it for an earlier row of
    // the call (its task is inserted after): the call's repeat is answered with that first row.
    return sql`(idempotency_keys.expires_at <= ${now}
      OR (NOT EXISTS (SELECT 1 FROM tasks t WHERE t.id = idempotency_keys.task_id)
        AND idempotency_keys.task_id NOT IN (SELECT value FROM json_each(${ids}))))`;
  }
  if (mode === "debounce" || !replace) return sql`NOT ${mode === "debounce" ? heldNotStarted(held) : heldLive(held)}`;
  // singleton, replace: free, or its task is running (a new one queues behind it).
  return sql`NOT ${heldNotStarted(held)}`;
}

/** The keyed rows of a chunk, as one JSON array for `json_each`. */
function keyedJson(rows: InsertRow[]): string {
  return `[${rows.map((r) => r.json).join(",")}]`;
}

/**
 * The statements that go before a chunk's insert in its batch, for its keyed rows: the replacements
 * (debounce, singleton replace), then one claim per mode and policy present. Empty when no row has a key.
 */
export function keyStatementsSql(queue: string, rows: InsertRow[], now: number): SQL[] {
  const keyed = rows.filter((r) => r.unique !== null);
  if (keyed.length === 0) return [];
  const statements: SQL[] = [];
  const replacing = keyed.filter((r) => r.unique!.replace);
  if (replacing.length > 0) {
    // A debounce moves the run time; a singleton replace keeps it. Only a task that has not started is touched.
    statements.push(sql`UPDATE tasks SET payload = u.payload,
        run_at = CASE WHEN u.mode = 'debounce' THEN u.run_at ELSE tasks.run_at END, updated_at = ${now}
      FROM (SELECT k.task_id, j.value->'payload' AS payload, j.value->>'run_at' AS run_at, k.mode
        FROM json_each(${keyedJson(replacing)}) AS j
        JOIN idempotency_keys k ON k.queue = ${queue} AND k.mode = j.value->>'$.unique.mode'
          AND k.key = j.value->>'$.unique.key') AS u
      WHERE tasks.id = u.task_id AND tasks.finished_at IS NULL AND tasks.started_at IS NULL
        AND tasks.state = 'pending'`);
  }
  const groups = new Map<string, InsertRow[]>();
  for (const row of keyed) {
    const group = `${row.unique!.mode}:${row.unique!.replace}`;
    groups.set(group, [...(groups.get(group) ?? []), row]);
  }
  for (const group of groups.values()) {
    const { mode, replace } = group[0]!.unique!;
    // A singleton queued behind a running task remembers it (prev_task_id -> the insert's after_id).
    const prev =
      mode === "singleton"
        ? sql`CASE WHEN ${heldLive("idempotency_keys.task_id")} THEN idempotency_keys.task_id END`
        : sql`NULL`;
    statements.push(sql`INSERT INTO idempotency_keys (queue, mode, key, task_id, expires_at, prev_task_id)
      SELECT ${queue}, j.value->>'$.unique.mode', j.value->>'$.unique.key', j.value->>'id',
        j.value->>'$.unique.expires_at', NULL
      FROM json_each(${keyedJson(group)}) AS j
      WHERE true
      ON CONFLICT (queue, mode, key) DO UPDATE SET task_id = excluded.task_id, expires_at = excluded.expires_at,
        prev_task_id = ${prev}
      WHERE ${claimableSql(mode, replace, now, JSON.stringify(group.map((r) => r.id)))}`);
  }
  return statements;
}

/** The insert's guard for keyed rows: a row with a key is inserted only if the key now names it. */
export function keyedInsertGuardSql(queue: string): SQL {
  return sql`(j.value->'unique' IS NULL OR EXISTS (SELECT 1 FROM idempotency_keys k
    WHERE k.queue = ${queue} AND k.mode = j.value->>'$.unique.mode' AND k.key = j.value->>'$.unique.key'
      AND k.task_id = j.value->>'id'))`;
}

/** The insert's `after_id` of a row: the running task a singleton queued behind, else null. */
export function afterIdSql(queue: string): SQL {
  return sql`CASE WHEN j.value->>'$.unique.mode' = 'singleton' THEN (SELECT k.prev_task_id FROM idempotency_keys k
    WHERE k.queue = ${queue} AND k.mode = 'singleton' AND k.key = j.value->>'$.unique.key'
      AND k.task_id = j.value->>'id') END`;
}

/** What a keyed row is answered with: the task its key names once the batch ran. */
export interface KeyAnswer {
  i: number;
  id: string;
  state: TaskState;
}

/** The statement after the insert: each keyed row's answer, read in the same batch. */
export function keyAnswersSql(queue: string, rows: InsertRow[]): SQL | null {
  const keyed = rows.filter((r) => r.unique !== null);
  if (keyed.length === 0) return null;
  const json = JSON.stringify(keyed.map((r) => ({ i: r.i, mode: r.unique!.mode, key: r.unique!.key })));
  return sql`SELECT j.value->>'i' AS i, t.id, t.state FROM json_each(${json}) AS j
    JOIN idempotency_keys k ON k.queue = ${queue} AND k.mode = j.value->>'mode' AND k.key = j.value->>'key'
    JOIN tasks t ON t.id = k.task_id`;
}

/** The prune's cursor in `sweep_cursors`. */
const KEY_PRUNE_CURSOR = "idempotency_keys";

/**
 * Deletes key rows past their claim (`expires_at <= now`) whose task is no longer live, one window of the
 * primary key (KEY_PRUNE_WINDOW rows read) per call, going on from where the last call stopped
 * (`sweep_cursors`); at the end of the table it starts again. The cron tick's step: reads a bounded number of
 * rows however many keys there are, and a key a prune has not reached yet is still claimed anew at its next
 * enqueue (the claim checks the window itself). Idempotent; two overlapping prunes delete each row once.
 *
 * @example
 * const { pruned } = await pruneExpiredKeys(db, Date.now());
 */
export async function pruneExpiredKeys(
  db: Db,
  now: number,
  window: number = KEY_PRUNE_WINDOW,
): Promise<{ pruned: number }> {
  const cursor = await db.get<{ position: string }>(
    sql`SELECT position FROM sweep_cursors WHERE name = ${KEY_PRUNE_CURSOR}`,
  );
  const [q, m, k] = cursor?.position ? (JSON.parse(cursor.position) as [string, string, string]) : ["", "", ""];
  const end = await db.get<{ queue: string; mode: string; key: string }>(sql`SELECT queue, mode, key
    FROM idempotency_keys WHERE (queue, mode, key) > (${q}, ${m}, ${k})
    ORDER BY queue, mode, key LIMIT 1 OFFSET ${window - 1}`);
  const upTo = end ? sql`AND (queue, mode, key) <= (${end.queue}, ${end.mode}, ${end.key})` : sql``;
  const next = end ? JSON.stringify([end.queue, end.mode, end.key]) : "";
  const [deleted = []] = await batchAll<{ key: string }>(db, [
    sql`DELETE FROM idempotency_keys WHERE (queue, mode, key) > (${q}, ${m}, ${k}) ${upTo}
      AND expires_at <= ${now}
      AND NOT EXISTS (SELECT 1 FROM tasks t WHERE t.id = idempotency_keys.task_id AND t.finished_at IS NULL)
      RETURNING key`,
    sql`INSERT INTO sweep_cursors (name, position) VALUES (${KEY_PRUNE_CURSOR}, ${next})
      ON CONFLICT (name) DO UPDATE SET position = excluded.position`,
  ]);
  return { pruned: deleted.length };
}
