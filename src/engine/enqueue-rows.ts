import { sql, type SQL } from "drizzle-orm";
import { decodeTime, monotonicFactory } from "ulid";
import type { ChildTaskSpec } from "../contracts/task";
import { tasksField, type TaskField } from "../contracts/task-field";
export { tasksField, oneTaskField, type TaskField } from "../contracts/task-field";
import { EdgeqError } from "../contracts/errors";
import { overBytes, storedJsonError, utf8Bytes } from "../contracts/json-value";
import {
  MAX_ENQUEUE_CHUNK_BYTES,
  MAX_ENQUEUE_CHUNK_TASKS,
  MAX_ENQUEUE_TASKS,
  MAX_PAYLOAD_BYTES,
} from "../contracts/limits";
import { countersSpec, countersUpsertSql } from "./counters";
import { enqueueUncountedSql } from "./counters-in-row";
import { DEFAULT_QUEUE_CONFIG } from "./queue-config";
import { flowUnkeyedSql } from "./flow-lease";
import { afterIdSql, keyedInsertGuardSql, uniqueJson, type UniqueJson, type UniqueKey } from "./unique-keys";
import type { DependencyFailurePolicy } from "../contracts/dependencies";
import { remoteRowFields, type RemoteDependency } from "./remote-dependencies";

/** One task to enqueue, already validated and with its run time resolved by the caller. */
export interface NewTask {
  id?: string;
  type?: string;
  payload?: unknown;
  priority?: number;
  /** Absolute time (ms) before which the task is not leased; defaults to `now`. */
  runAt?: number;
  maxAttempts?: number;
  dedupeKey?: string;
  group?: string;
  /** The task's key for flow control (docs/flow-control.md). */
  key?: string;
  /** Tasks to enqueue when this one completes (see ChildTaskSpec in src/contracts/task.ts). */
  then?: ChildTaskSpec[];
  /** The slot of the partition the task joins when its id does not carry it (the `slot` column). */
  slot?: number;
  /** Ids of tasks on the same database this one waits for (src/engine/dependencies.ts). */
  dependsOn?: string[];
  /** What a dependency ending dead, cancelled or expired does to it (default `fail`). */
  onDependencyFailure?: DependencyFailurePolicy;
  /** Those of `dependsOn` that live on another database, as the shard layer found them (their edges there are
   * written: src/engine/remote-dependencies.ts): not looked for here, counted as their `outcome` says. */
  remoteDependencies?: RemoteDependency[];
  /** Start deadline (ms): not started by then, the task ends `expired` (src/engine/expire.ts); after runAt. */
  startBy?: number;
  /** An idempotency, debounce or singleton key (src/engine/unique-keys.ts). A debounce sets the run time. */
  unique?: UniqueKey;
}

/** A task ready to insert: checked, its id made, serialised once. */
export interface InsertRow {
  i: number;
  id: string;
  type: string;
  run_at: number;
  dedupe_key: string | null;
  /** The task's key of uniqueness over time, when it has one (src/engine/unique-keys.ts). */
  unique: UniqueJson | null;
  /** Whether the id is the client's (it may be another task's: src/engine/ids-of-other-queues.ts). */
  clientId: boolean;
  /** The row as the insert statement reads it (`json_each`): serialised once, payload included. */
  json: string;
  /** `json`'s size in UTF-8 bytes, for chunking. */
  bytes: number;
  /** The ids it depends on, each once, or null (src/engine/dependencies.ts). */
  dependsOn: string[] | null;
  /** Those of them on another database, or null (src/engine/remote-dependencies.ts). */
  remote: RemoteDependency[] | null;
}

/** How far ahead of our clock a client's ULID may be: five minutes covers real clock skew. Later ids would
 * sort after tasks created after them and escape retention pruning until their time came. */
const MAX_CLIENT_ID_SKEW_MS = 5 * 60 * 1000;

/** A character that may not be one byte of UTF-8. JSON escapes control characters, so serialised text without
 * one is printable ASCII: as many bytes as characters. */
const NON_ASCII = /[^\x20-\x7e]/;

/** Refuses a call of more than MAX_ENQUEUE_TASKS tasks, before anything is checked or stored (every store). */
export function assertEnqueueCallSize(input: NewTask[]): void {
  if (input.length > MAX_ENQUEUE_TASKS) {
    throw new EdgeqError(
      "payload_too_large",
      `at most ${MAX_ENQUEUE_TASKS} tasks per enqueue call (got ${input.length})`,
    );
  }
}

/**
 * Checks every task (payload and `then` stored as sent and within MAX_PAYLOAD_BYTES together, a client id
 * a ULID not from the future) and makes each its row: an id (the client's, or a new ULID) and its JSON, the
 * one text that is sized and inserted. Throws the first refusal, named as the caller's request names it.
 *
 * @example
 * const rows = insertRows([{ payload: { to: "a@example.com" } }], Date.now());
 */
export function insertRows(
  input: NewTask[],
  now: number,
  field: TaskField = tasksField,
  newId: (now: number) => string = monotonicFactory(),
): InsertRow[] {
  const nextId = newId;
  const keysSeen = new Map<string, number>();
  return input.map((task, i) => {
    if (task.unique) checkKeyed(task, i, field, keysSeen);
    const payload = task.payload ?? null;
    // Serialised once: checked, sized and inserted as this very text.
    const payloadJson = JSON.stringify(payload);
    // The HTTP schema refuses these first, naming the field; checked here too for every other caller.
    const payloadError = storedJsonError(payload, field(i, "payload"), "", payloadJson);
    if (payloadError) throw payloadError;
    const then = task.then && task.then.length > 0 ? task.then : null;
    const thenJson = task.then ? JSON.stringify(task.then) : null;
    const thenError = task.then ? storedJsonError(task.then, field(i, "then"), "", thenJson!) : null;
    if (thenError) throw thenError;
    const together = thenJson === null ? null : overBytes(payloadJson + thenJson, MAX_PAYLOAD_BYTES);
    if (together !== null) {
      const where = field(i, "");
      throw new EdgeqError(
        "payload_too_large",
        `${where ? `${where}: ` : ""}payload and then together are ${together} bytes of JSON; the limit is ${MAX_PAYLOAD_BYTES} bytes`,
      );
    }
    if (task.id !== undefined && ulidTime(task.id, field(i, "id")) > now + MAX_CLIENT_ID_SKEW_MS) {
      throw new EdgeqError(
        "invalid_request",
        `${field(i, "id")}: its ULID time is in the future; ids must be made at enqueue time (purges walk ids in time order)`,
      );
    }
    const dependsOn = task.dependsOn && task.dependsOn.length > 0 ? [...new Set(task.dependsOn)] : null;
    const remote = dependsOn && task.remoteDependencies?.length ? task.remoteDependencies : null;
    const unique = task.unique ? uniqueJson(task.unique, now) : null;
    // A debounce runs its window after the latest enqueue of its key.
    const runAt = task.unique?.mode === "debounce" ? now + (task.unique.windowMs ?? 0) : (task.runAt ?? now);
    if (task.startBy !== undefined && !(task.startBy > runAt)) {
      throw new EdgeqError(
        "invalid_request",
        `${field(i, "start_by")}: the start deadline must come after the task's run time (and now)`,
      );
    }
    const fields = {
      id: task.id ?? nextId(now),
      type: task.type ?? "default",
      priority: task.priority ?? 0,
      run_at: runAt,
      // null: the queue's own, read by the insert (see insertSql).
      max_attempts: task.maxAttempts ?? null,
      dedupe_key: task.dedupeKey ?? null,
      group_key: task.group ?? null,
      // Omitted when unkeyed, so an unkeyed row's JSON is as before.
      flow_key: task.key,
      // Omitted from the JSON when the id carries the slot (JSON.stringify drops undefined).
      slot: task.slot,
      // Each id once (a repeat would be counted twice and released never); omitted without dependencies.
      depends_on: dependsOn ?? undefined,
      on_dependency_failure: dependsOn ? (task.onDependencyFailure ?? "fail") : undefined,
      // Omitted without remote dependencies (src/engine/remote-dependencies.ts).
      ...remoteRowFields(remote),
      // Both omitted when not given (JSON.stringify drops undefined), so a plain row's JSON is as before.
      start_by: task.startBy,
      unique: unique ?? undefined,
    };
    const head = JSON.stringify(fields);
    const json = `${head.slice(0, -1)},"payload":${payloadJson}${then ? `,"then":${thenJson}` : ""}}`;
    const { id, type, run_at, dedupe_key } = fields;
    // Sized without encoding when ASCII (encoding every row was 4 % of a bulk enqueue's CPU here).
    const bytes = NON_ASCII.test(json) ? utf8Bytes(json) : json.length;
    return { i, id, type, run_at, dedupe_key, unique, clientId: task.id !== undefined, json, bytes, dependsOn, remote };
  });
}

/**
 * A keyed task's own rules: no dedupe_key (a partitioned queue places a task by one key), and a debounce or
 * singleton key once per call (which of two would be kept is not obvious; an idempotency key repeated is
 * answered with the first). Its id, when given, must be new (the shard layer's slot id): the API refuses a
 * client's own id beside a key (src/contracts/api.ts), as the key is the enqueue's idempotence.
 */
function checkKeyed(task: NewTask, i: number, field: TaskField, seen: Map<string, number>): void {
  const unique = task.unique!;
  const name = field(i, unique.mode);
  const refuse = (message: string) => new EdgeqError("invalid_request", `${name}: ${message}`);
  if (task.dedupeKey !== undefined) throw refuse("not with dedupe_key (a task is placed by one key)");
  if (unique.mode === "idempotency") return;
  const seenAt = seen.get(`${unique.mode}:${unique.key}`);
  if (seenAt !== undefined) throw refuse(`its key is also ${field(seenAt, unique.mode)}'s; one per call`);
  seen.set(`${unique.mode}:${unique.key}`, i);
}

/** The time encoded in a client's ULID; a malformed id is the client's mistake, not a 500. */
function ulidTime(id: string, field: string): number {
  try {
    return decodeTime(id);
  } catch {
    throw new EdgeqError("invalid_request", `${field}: not a ULID (26 Crockford base32 characters)`);
  }
}

/**
 * How an insert reads its rows: where from (`j`, with a `value` column per row), each row's state and run_at,
 * and columns beyond the plain task's. Plain rows by default; a chunk with dependencies inserts its rows in
 * the shape of src/engine/dependencies.ts (waiting, counted, or ended by a failed dependency).
 */
export interface InsertShape {
  source: (json: string) => SQL;
  state: SQL;
  priority: SQL;
  runAt: SQL;
  /** Extra columns, each preceded by a comma, and their values in the same order. */
  columns: SQL;
  values: SQL;
}

/** A plain task's shape: pending, due at its run_at. */
export const PLAIN_SHAPE: InsertShape = {
  source: (json) => sql`json_each(${json})`,
  state: sql`'pending'`,
  priority: sql`j.value->>'priority'`,
  runAt: sql`j.value->>'run_at'`,
  columns: sql``,
  values: sql``,
};

/**
 * The statement inserting one chunk of rows (one JSON array read with `json_each`: D1 allows only 100 bound
 * parameters per statement), where `guard` holds; a row whose id or live dedupe key exists is skipped
 * (`ON CONFLICT DO NOTHING`). Returns the ids it inserted. A task without `max_attempts` takes its queue's.
 */
export function insertSql(
  queue: string,
  chunk: InsertRow[],
  now: number,
  guard: SQL,
  shape = PLAIN_SHAPE,
  /** The rows keep their counter events (src/engine/counters-in-row.ts) where their ids are above the fold's
   * cursor; RETURNING's `in_row` says which, for an enqueue that counts the others afterwards. Only an insert
   * whose counting skips them passes true (`countEnqueuedSql`, enqueueTasks' own count). */
  inRow = false,
): SQL {
  const json = `[${chunk.map((r) => r.json).join(",")}]`;
  // Rows with a key are inserted only where the key's claim (earlier in the batch) names them.
  const keyed = chunk.some((r) => r.unique !== null);
  const columns = taskColumnsSql(queue, now, shape, keyed, inRow);
  return sql`INSERT INTO tasks
      (${sql.raw(columns.map(([name]) => name).join(", "))}${shape.columns})
    SELECT ${sql.join(
      columns.map(([, value]) => value),
      sql`, `,
    )}${shape.values}
    FROM ${shape.source(json)} AS j
    WHERE ${keyed ? sql`${guard} AND ${keyedInsertGuardSql(queue)}` : guard}
    ON CONFLICT DO NOTHING
    RETURNING id, state, uncounted IS NOT NULL AS in_row`;
}

/**
 * The columns an insert sets and each one's value, read from the row's JSON (`j.value`) in `shape`: what
 * `insertSql` inserts and what a reused row is set to (src/engine/reuse-rows.ts). A task without
 * `max_attempts` takes its queue's.
 */
export function taskColumnsSql(
  queue: string,
  now: number,
  shape: InsertShape,
  keyed: boolean,
  inRow: boolean,
): Array<[string, SQL]> {
  return [
    ["id", sql`j.value->>'id'`],
    ["queue", sql`${queue}`],
    ["type", sql`j.value->>'type'`],
    ["state", shape.state],
    ["priority", shape.priority],
    ["payload", sql`j.value->'payload'`],
    [
      "max_attempts",
      sql`coalesce(j.value->>'max_attempts', (SELECT max_attempts FROM queues WHERE name = ${queue}),
        ${DEFAULT_QUEUE_CONFIG.max_attempts})`,
    ],
    ["run_at", shape.runAt],
    ["dedupe_key", sql`j.value->>'dedupe_key'`],
    ["group_key", sql`j.value->>'group_key'`],
    ["then_tasks", sql`CASE WHEN j.value->>'then' IS NULL THEN NULL ELSE j.value->'then' END`],
    ["slot", sql`j.value->>'slot'`],
    ["flow_key", sql`j.value->>'flow_key'`],
    ["flow_unkeyed", flowUnkeyedSql(sql`j.value->>'flow_key'`, queue)],
    ["start_by", sql`j.value->>'start_by'`],
    ["after_id", keyed ? afterIdSql(queue) : sql`NULL`],
    ["created_at", sql`${now}`],
    ["updated_at", sql`${now}`],
    ["uncounted", inRow ? enqueueUncountedSql(sql`j.value->>'id'`, now) : sql`NULL`],
  ];
}

/** What an enqueue counts, over the tasks a chunk created. */
const ENQUEUED_COUNTS = countersSpec([["enqueued", "count(*)"]]);

/**
 * The `enqueued` counters of a chunk, over its rows that exist once its insert ran (in the same batch): for
 * rows whose ids the call made itself, exactly the ones it created. The ids alone are bound (the rows' JSON
 * is up to MAX_ENQUEUE_CHUNK_BYTES: bound twice, a batch of a full chunk was more than local D1 takes in
 * one request).
 */
export function countEnqueuedSql(chunk: InsertRow[], now: number): SQL {
  const ids = JSON.stringify(chunk.map((r) => r.id));
  // A task that keeps its events in its row (src/engine/counters-in-row.ts) has its enqueue counted there.
  const created = sql`SELECT t.queue, t.type FROM json_each(${ids}) AS j CROSS JOIN tasks t ON t.id = j.value
    WHERE t.uncounted IS NULL`;
  return countersUpsertSql(now, created, ENQUEUED_COUNTS);
}

/** Splits rows into JSON arrays of at most MAX_ENQUEUE_CHUNK_TASKS rows and MAX_ENQUEUE_CHUNK_BYTES each. */
export function chunkRows(rows: InsertRow[]): InsertRow[][] {
  const chunks: InsertRow[][] = [];
  let current: InsertRow[] = [];
  let size = 2;
  for (const row of rows) {
    const rowSize = row.bytes + 1;
    if (current.length > 0 && (size + rowSize > MAX_ENQUEUE_CHUNK_BYTES || current.length >= MAX_ENQUEUE_CHUNK_TASKS)) {
      chunks.push(current);
      current = [];
      size = 2;
    }
    current.push(row);
    size += rowSize;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}
