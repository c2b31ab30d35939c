import { sql } from "drizzle-orm";
import { decodeTime, monotonicFactory } from "ulid";
import type { ChildTaskSpec } from "../contracts/task";
import { batchAll, type Db } from "../db/client";
import { giveWay } from "../db/give-way";
import { countersSpec, countersUpsertSql, recordCounters } from "./counters";
import { EdgeqError } from "../contracts/errors";
import { overBytes, storedJsonError, utf8Bytes } from "../contracts/json-value";
import {
  MAX_ENQUEUE_CHUNK_BYTES,
  MAX_ENQUEUE_CHUNK_TASKS,
  MAX_ENQUEUE_TASKS,
  MAX_PAYLOAD_BYTES,
} from "../contracts/limits";
import { DEFAULT_QUEUE_CONFIG } from "./queue-config";
import { idInOtherQueue, noIdOfOtherQueue, refuseIdsOfOtherQueues } from "./ids-of-other-queues";
import type { TaskState } from "../contracts/states";

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
  /** Tasks to enqueue when this one completes (see ChildTaskSpec in src/contracts/task.ts). */
  then?: ChildTaskSpec[];
  /** The slot of the partition the task joins when its id does not carry it (the `slot` column). */
  slot?: number;
}

export interface EnqueueOutcome {
  id: string;
  state: TaskState;
  /** True when no task was created: the id already existed, or a live task held the dedupe key. */
  deduplicated: boolean;
}

export interface EnqueueResult {
  tasks: EnqueueOutcome[];
  /** Earliest run_at among the tasks created, for the coordinator's alarm; null if none was created. */
  earliestRunAt: number | null;
}

interface InsertRow {
  i: number;
  id: string;
  type: string;
  run_at: number;
  dedupe_key: string | null;
  /** Whether the id is the client's (it may be another task's: src/engine/ids-of-other-queues.ts). */
  clientId: boolean;
  /** The row as the insert statement reads it (`json_each`): serialised once, payload included. */
  json: string;
  /** `json`'s size in UTF-8 bytes, for chunking. */
  bytes: number;
}

/** How far ahead of our clock a client's ULID may be: five minutes covers real clock skew. Later ids would
 * sort after tasks created after them and escape retention pruning until their time came. */
const MAX_CLIENT_ID_SKEW_MS = 5 * 60 * 1000;

/** The time encoded in a client's ULID; a malformed id is the client's mistake, not a 500. */
function ulidTime(id: string, index: number): number {
  try {
    return decodeTime(id);
  } catch {
    throw new EdgeqError("invalid_request", `tasks[${index}].id: not a ULID (26 Crockford base32 characters)`);
  }
}

/** A character that may not be one byte of UTF-8. JSON escapes control characters, so serialised text without
 * one is printable ASCII: as many bytes as characters. */
const NON_ASCII = /[^\x20-\x7e]/;

/** Existing ids or dedupe keys can free up between our insert and our read-back; retry that few times. */
const MAX_ENQUEUE_ROUNDS = 3;

/**
 * Enqueues up to MAX_ENQUEUE_TASKS tasks. Each statement binds a single JSON array read with `json_each`,
 * because D1 allows only 100 bound parameters per statement.
 *
 * Atomicity: a call whose tasks fit in one chunk (MAX_ENQUEUE_CHUNK_TASKS tasks and MAX_ENQUEUE_CHUNK_BYTES
 * of JSON) is one statement, all or nothing. A larger call is inserted chunk after chunk, in input order,
 * each chunk its own statement — so leases run between them instead of waiting behind one transaction of
 * 10,000 tasks (D1 runs one statement at a time; a 10,000 × 1 KiB batch was 0.26-0.71 s of SQL here).
 * Every check (sizes, ids, JSON) runs before the first insert, so a refused call inserts nothing; only a
 * failure of D1 itself midway leaves the chunks before it inserted. A client that retries such a call
 * with the same ids or dedupe keys gets those tasks back `deduplicated` instead of twice.
 *
 * An id that already exists in this queue, or a dedupe key held by a live task of the queue, creates
 * nothing: the existing task is returned with `deduplicated: true`. Results are in input order. An id that
 * is a task of another queue refuses the call, `409 id_in_other_queue` (src/engine/ids-of-other-queues.ts):
 * each statement of a call with client ids inserts none of its rows if one is, and a call of several
 * statements checks all its ids before the first — so a refused call inserts nothing, except when another
 * call takes one of its ids in another queue while it runs: the statements before that id's stay, as after
 * a failure of D1 midway.
 *
 * Round trips: a task without `maxAttempts` takes its queue's in the insert itself, and when every id is
 * one this call made, each chunk's `enqueued` counters go in the chunk's own batch — so the usual enqueue is
 * one D1 call (it was three: the queue's config, the insert, the counters), which is most of what an
 * enqueue's answer waits for.
 *
 * @example
 * const { tasks } = await enqueueTasks(db, "emails", [{ payload: { to: "a@example.com" } }], Date.now());
 */
export async function enqueueTasks(db: Db, queue: string, input: NewTask[], now: number): Promise<EnqueueResult> {
  if (input.length === 0) return { tasks: [], earliestRunAt: null };
  if (input.length > MAX_ENQUEUE_TASKS) {
    throw new EdgeqError(
      "payload_too_large",
      `at most ${MAX_ENQUEUE_TASKS} tasks per enqueue call (got ${input.length})`,
    );
  }
  const nextId = monotonicFactory();
  const rows: InsertRow[] = input.map((task, i) => {
    const payload = task.payload ?? null;
    // Serialised once: checked, sized and inserted as this very text.
    const payloadJson = JSON.stringify(payload);
    // The HTTP schema refuses these first, naming the field; checked here too for every other caller.
    const payloadError = storedJsonError(payload, `tasks[${i}].payload`, "", payloadJson);
    if (payloadError) throw payloadError;
    const then = task.then && task.then.length > 0 ? task.then : null;
    const thenJson = task.then ? JSON.stringify(task.then) : null;
    const thenError = task.then ? storedJsonError(task.then, `tasks[${i}].then`, "", thenJson!) : null;
    if (thenError) throw thenError;
    const together = thenJson === null ? null : overBytes(payloadJson + thenJson, MAX_PAYLOAD_BYTES);
    if (together !== null) {
      throw new EdgeqError(
        "payload_too_large",
        `tasks[${i}]: payload and then together are ${together} bytes of JSON; the limit is ${MAX_PAYLOAD_BYTES} bytes`,
      );
    }
    if (task.id !== undefined && ulidTime(task.id, i) > now + MAX_CLIENT_ID_SKEW_MS) {
      throw new EdgeqError(
        "invalid_request",
        `tasks[${i}].id: its ULID time is in the future; ids must be made at enqueue time (purges walk ids in time order)`,
      );
    }
    const fields = {
      id: task.id ?? nextId(now),
      type: task.type ?? "default",
      priority: task.priority ?? 0,
      run_at: task.runAt ?? now,
      // null: the queue's own, read by the insert (see insertRows).
      max_attempts: task.maxAttempts ?? null,
      dedupe_key: task.dedupeKey ?? null,
      group_key: task.group ?? null,
      // Omitted from the JSON when the id carries the slot (JSON.stringify drops undefined).
      slot: task.slot,
    };
    const head = JSON.stringify(fields);
    const json = `${head.slice(0, -1)},"payload":${payloadJson}${then ? `,"then":${thenJson}` : ""}}`;
    const { id, type, run_at, dedupe_key } = fields;
    // Sized without encoding when ASCII (encoding every row was 4 % of a bulk enqueue's CPU here).
    const bytes = NON_ASCII.test(json) ? utf8Bytes(json) : json.length;
    return { i, id, type, run_at, dedupe_key, clientId: task.id !== undefined, json, bytes };
  });

  const outcomes = new Array<EnqueueOutcome | undefined>(rows.length);
  let earliestRunAt: number | null = null;
  const created: InsertRow[] = [];
  // Ids this call made cannot belong to any other task, so the rows carrying them that exist right after
  // the insert are exactly the ones it created: the counters can count them in the same batch. A client's
  // id might be another call's task, created in the same millisecond: those calls count afterwards.
  const countInBatch = input.every((task) => task.id === undefined);
  if (!countInBatch && chunkRows(rows).length > 1) {
    await refuseIdsOfOtherQueues(
      db,
      queue,
      rows.filter((row) => row.clientId),
    );
  }
  let remaining = rows;
  for (let round = 0; round < MAX_ENQUEUE_ROUNDS && remaining.length > 0; round++) {
    const inserted = await insertRows(db, queue, remaining, now, countInBatch);
    for (const row of remaining) {
      if (!inserted.has(row.id)) continue;
      outcomes[row.i] = { id: row.id, state: "pending", deduplicated: false };
      inserted.delete(row.id); // a repeated id within one call: only its first occurrence was inserted
      created.push(row);
      earliestRunAt = earliestRunAt == null ? row.run_at : Math.min(earliestRunAt, row.run_at);
    }
    remaining = remaining.filter((row) => outcomes[row.i] === undefined);
    if (remaining.length === 0) break;
    const existing = await findExisting(db, queue, remaining);
    for (const row of remaining) {
      const found = existing.get(row.i);
      if (found && found.queue !== queue) throw idInOtherQueue(row.i, found.id, found.queue);
      if (found) outcomes[row.i] = { id: found.id, state: found.state, deduplicated: true };
    }
    remaining = remaining.filter((row) => outcomes[row.i] === undefined);
  }
  if (remaining.length > 0) {
    throw new Error(
      `enqueue: ${remaining.length} task(s) neither inserted nor found after ${MAX_ENQUEUE_ROUNDS} rounds`,
    );
  }
  if (!countInBatch) {
    await recordCounters(
      db,
      created.map((row) => ({ queue, type: row.type, counter: "enqueued" as const })),
      now,
    );
  }
  return { tasks: outcomes as EnqueueOutcome[], earliestRunAt };
}

/** What an enqueue counts, over the tasks a chunk created. */
const ENQUEUED_COUNTS = countersSpec([["enqueued", "count(*)"]]);

/**
 * Inserts rows chunk after chunk, each chunk one statement (see `enqueueTasks`); returns the ids inserted.
 * With `countInBatch`, each chunk's counters run in the insert's batch over the rows it created (the chunk's
 * ids that exist now). Between chunks it gives way (src/db/give-way.ts), so that leases sent meanwhile run
 * theirs in between.
 */
async function insertRows(
  db: Db,
  queue: string,
  rows: InsertRow[],
  now: number,
  countInBatch: boolean,
): Promise<Set<string>> {
  const inserted = new Set<string>();
  for (const [n, chunk] of chunkRows(rows).entries()) {
    if (n > 0) await giveWay();
    const json = `[${chunk.map((r) => r.json).join(",")}]`;
    const insert = sql`INSERT INTO tasks
        (id, queue, type, state, priority, payload, max_attempts, run_at, dedupe_key, group_key, then_tasks,
         slot, created_at, updated_at)
      SELECT j.value->>'id', ${queue}, j.value->>'type', 'pending', j.value->>'priority', j.value->'payload',
        coalesce(j.value->>'max_attempts', (SELECT max_attempts FROM queues WHERE name = ${queue}),
          ${DEFAULT_QUEUE_CONFIG.max_attempts}),
        j.value->>'run_at', j.value->>'dedupe_key', j.value->>'group_key',
        CASE WHEN j.value->>'then' IS NULL THEN NULL ELSE j.value->'then' END, j.value->>'slot', ${now}, ${now}
      FROM json_each(${json}) AS j
      WHERE ${countInBatch ? sql`true` : noIdOfOtherQueue(queue, clientIdsOf(chunk))}
      ON CONFLICT DO NOTHING
      RETURNING id`;
    // The ids alone (the rows' JSON is up to MAX_ENQUEUE_CHUNK_BYTES: bound twice, a batch of a full chunk
    // was more than local D1 takes in one request).
    const ids = JSON.stringify(chunk.map((r) => r.id));
    const created = sql`SELECT t.queue, t.type FROM json_each(${ids}) AS j CROSS JOIN tasks t ON t.id = j.value`;
    const [returned = []] = countInBatch
      ? await batchAll<{ id: string }>(db, [insert, countersUpsertSql(now, created, ENQUEUED_COUNTS)])
      : [await db.all<{ id: string }>(insert)];
    for (const r of returned) inserted.add(r.id);
  }
  return inserted;
}

/** The client ids of a chunk, as the JSON array its insert's guard reads. */
function clientIdsOf(chunk: InsertRow[]): string {
  return JSON.stringify(chunk.flatMap((r) => (r.clientId ? [r.id] : [])));
}

/** A task an enqueue found in the way of a row: by its id (of any queue), or by its dedupe key. */
interface Existing {
  id: string;
  state: TaskState;
  queue: string;
}

/** For rows that were not inserted: the task that has their id (of any queue), else the live task holding
 * their dedupe key. */
async function findExisting(db: Db, queue: string, rows: InsertRow[]): Promise<Map<number, Existing>> {
  const keys = JSON.stringify(rows.map((r) => ({ i: r.i, id: r.id, dedupe_key: r.dedupe_key })));
  const [byId = [], byKey = []] = await batchAll<Existing & { i: number }>(db, [
    sql`SELECT j.value->>'i' AS i, t.id, t.state, t.queue
      FROM json_each(${keys}) AS j JOIN tasks t ON t.id = j.value->>'id'`,
    sql`SELECT j.value->>'i' AS i, t.id, t.state, t.queue
      FROM json_each(${keys}) AS j JOIN tasks t
        ON t.queue = ${queue} AND t.dedupe_key = j.value->>'dedupe_key' AND t.finished_at IS NULL`,
  ]);
  const found = new Map<number, Existing>();
  for (const r of byKey) found.set(Number(r.i), r);
  for (const r of byId) found.set(Number(r.i), r); // the id wins over the key
  return found;
}

/** Splits rows into JSON arrays of at most MAX_ENQUEUE_CHUNK_TASKS rows and MAX_ENQUEUE_CHUNK_BYTES each. */
function chunkRows(rows: InsertRow[]): InsertRow[][] {
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
