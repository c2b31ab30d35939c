import { sql, type SQL } from "drizzle-orm";
import { batchAll, type Db } from "../db/client";
import { giveWay } from "../db/give-way";
import { recordCounters } from "./counters";
import {
  assertEnqueueCallSize,
  chunkRows,
  countEnqueuedSql,
  insertRows,
  insertSql,
  tasksField,
  type InsertRow,
  type NewTask,
  type TaskField,
} from "./enqueue-rows";
import { noIdOfOtherQueue, refuseIdsOfOtherQueues } from "./ids-of-other-queues";
import { idInOtherQueue } from "../contracts/task-field";
import {
  processingFromRows,
  processingGuardSql,
  ProcessingChanged,
  sameProcessing,
  storedProcessingSql,
  type QueueProcessing,
} from "./queue-processing";
import type { TaskState } from "../contracts/states";
import { keyAnswersSql, keyStatementsSql, type KeyAnswer } from "./unique-keys";
import { edgesSql, hasDependencies, refuseUnknownDependencies, waitingShape } from "./dependencies";
import { remoteWaitsSql } from "./remote-dependencies";
import { reuseRowSql, reusesRow } from "./reuse-rows";

export { tasksField, oneTaskField, type NewTask, type TaskField } from "./enqueue-rows";

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

/** What an enqueue call may be told besides its tasks. */
export interface EnqueueOptions {
  /** How the caller's request names task i's fields in a refusal (default `tasks[i].…`). */
  field?: TaskField;
  /**
   * The queue processing its tasks were checked for (src/operations/enqueue-checks.ts): the first insert
   * stores nothing unless the queue still runs its tasks so, and then `ProcessingChanged` is thrown with
   * the stored processing. Chunks after the first are inserted as checked: a config written while a bulk
   * call runs is checked by the next call (and by the processor at run time, as ever).
   */
  checkedFor?: QueueProcessing;
  /**
   * How an id is made for a task the call gives none: the shard layer's ids carrying the task's partition
   * (src/shards/task-slot.ts), so a single-task call finds its database from the id alone. Default: a ULID.
   * A pack store makes its pack ids from it too (their characters 10-13 are the id's: src/engine/packs/pack-ids.ts).
   */
  newId?: (now: number) => string;
}

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
 * enqueue's answer waits for. A call told what processing its tasks were checked for (`checkedFor`) keeps
 * that: the guard is in the insert and the stored processing is read in the same batch.
 *
 * @example
 * const { tasks } = await enqueueTasks(db, "emails", [{ payload: { to: "a@example.com" } }], Date.now());
 */
export async function enqueueTasks(
  db: Db,
  queue: string,
  input: NewTask[],
  now: number,
  options: EnqueueOptions = {},
): Promise<EnqueueResult> {
  if (input.length === 0) return { tasks: [], earliestRunAt: null };
  const field = options.field ?? tasksField;
  assertEnqueueCallSize(input);
  const rows = insertRows(input, now, field, options.newId);
  if (hasDependencies(rows)) await refuseUnknownDependencies(db, rows, field);

  const outcomes = new Array<EnqueueOutcome | undefined>(rows.length);
  let earliestRunAt: number | null = null;
  const created: InsertRow[] = [];
  const countedInRow = new Set<string>();
  // Ids this call made cannot belong to any other task, so the rows carrying them that exist right after
  // the insert are exactly the ones it created: the counters can count them in the same batch. A client's
  // id might be another call's task, created in the same millisecond: those calls count afterwards.
  const countInBatch = input.every((task) => task.id === undefined);
  if (!countInBatch && chunkRows(rows).length > 1) {
    await refuseIdsOfOtherQueues(
      db,
      queue,
      rows.filter((row) => row.clientId),
      field,
    );
  }
  let remaining = rows;
  for (let round = 0; round < MAX_ENQUEUE_ROUNDS && remaining.length > 0; round++) {
    // The first statement of the first round carries the caller's check (see EnqueueOptions.checkedFor).
    const checkedFor = round === 0 ? options.checkedFor : undefined;
    const { inserted, keyAnswers, inRow } = await insertChunks(db, queue, remaining, now, countInBatch, checkedFor);
    for (const id of inRow) countedInRow.add(id);
    for (const row of remaining) {
      const state = inserted.get(row.id);
      if (state === undefined) continue;
      outcomes[row.i] = { id: row.id, state, deduplicated: false };
      inserted.delete(row.id); // a repeated id within one call: only its first occurrence was inserted
      created.push(row);
      earliestRunAt = earliestRunAt == null ? row.run_at : Math.min(earliestRunAt, row.run_at);
    }
    // A keyed row not inserted is answered with the task its key names, read in its own batch.
    for (const row of remaining) {
      const answer = keyAnswers.get(row.i);
      if (outcomes[row.i] === undefined && row.unique && answer) {
        outcomes[row.i] = { id: answer.id, state: answer.state, deduplicated: true };
      }
    }
    remaining = remaining.filter((row) => outcomes[row.i] === undefined);
    if (remaining.length === 0) break;
    const existing = await findExisting(db, queue, remaining);
    for (const row of remaining) {
      const found = existing.get(row.i);
      if (found && found.queue !== queue) throw idInOtherQueue(row.i, found.id, found.queue, field);
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
      created
        .filter((row) => !countedInRow.has(row.id))
        .map((row) => ({ queue, type: row.type, counter: "enqueued" as const })),
      now,
    );
  }
  return { tasks: outcomes as EnqueueOutcome[], earliestRunAt };
}

/**
 * Inserts rows chunk after chunk, each chunk one statement (see `enqueueTasks`); returns the ids inserted.
 * With `countInBatch`, each chunk's counters run in the insert's batch over the rows it created (the chunk's
 * ids that exist now). With `checkedFor`, the first chunk's insert holds only while the queue's processing
 * is still that one, and its batch reads the stored one: when it differs, nothing was inserted and
 * `ProcessingChanged` says what it is now. Between chunks it gives way (src/db/give-way.ts), so that leases
 * sent meanwhile run theirs in between. Rows with an idempotency, debounce or singleton key have their key
 * statements around the insert in the same batch (src/engine/unique-keys.ts), and are answered with the task
 * their key names (`keyAnswers`, by the row's index).
 */
async function insertChunks(
  db: Db,
  queue: string,
  rows: InsertRow[],
  now: number,
  countInBatch: boolean,
  checkedFor: QueueProcessing | undefined,
): Promise<{ inserted: Map<string, TaskState>; keyAnswers: Map<number, KeyAnswer>; inRow: Set<string> }> {
  const inserted = new Map<string, TaskState>();
  const keyAnswers = new Map<number, KeyAnswer>();
  // Created rows that keep their counter events (src/engine/counters-in-row.ts): counted there, not here.
  const inRow = new Set<string>();
  for (const [n, chunk] of chunkRows(rows).entries()) {
    if (n > 0) await giveWay();
    const check = n === 0 ? checkedFor : undefined;
    const ids = countInBatch ? sql`true` : noIdOfOtherQueue(queue, clientIdsOf(chunk));
    // A chunk with dependencies inserts in their shape and writes its edges next (src/engine/dependencies.ts).
    const waits = hasDependencies(chunk);
    const guard = check ? sql`${ids} AND ${processingGuardSql(queue, check)}` : ids;
    const insert = insertSql(queue, chunk, now, guard, waits ? waitingShape(now) : undefined, true);
    // Keyed rows: their replacements and claims before the insert, their answers last (src/engine/unique-keys.ts).
    const before = keyStatementsSql(queue, chunk, now);
    const answers = keyAnswersSql(queue, chunk);
    // One plain task whose id this call made takes a row past its retention where there is one, else the
    // insert makes it (src/engine/reuse-rows.ts).
    const reuse = reusesRow(chunk, countInBatch) ? reuseRowSql(queue, chunk[0]!, now, guard) : null;
    const statements: SQL[] = [...before, ...(reuse ? [reuse] : []), insert];
    // A dependency on another database: its wait row, before the edges (which skip it).
    const remoteWaits = waits ? remoteWaitsSql(chunk, now) : null;
    if (remoteWaits) statements.push(remoteWaits);
    if (waits) statements.push(edgesSql(chunk, now));
    if (countInBatch) statements.push(countEnqueuedSql(chunk, now));
    if (check) statements.push(storedProcessingSql(queue));
    if (answers) statements.push(answers);
    const results = statements.length === 1 ? [await db.all(insert)] : await batchAll(db, statements);
    if (check) {
      const at = statements.length - (answers ? 2 : 1);
      const stored = processingFromRows(results[at] as Array<{ mode: string | null; processor: string | null }>);
      if (!sameProcessing(stored, check)) throw new ProcessingChanged(stored);
    }
    // The insert's rows, and the reuse's before it (at most one of the two made each task).
    const made = results.slice(before.length, before.length + (reuse ? 2 : 1)).flat() as Array<{
      id: string;
      state: TaskState;
      in_row: number;
    }>;
    for (const r of made) {
      inserted.set(r.id, r.state);
      if (r.in_row) inRow.add(r.id);
    }
    if (answers) for (const a of results.at(-1) as KeyAnswer[]) keyAnswers.set(Number(a.i), a);
  }
  return { inserted, keyAnswers, inRow };
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
