import { sql, type SQL } from "drizzle-orm";
import { EdgeqError } from "../contracts/errors";
import { MAX_ENQUEUE_CHUNK_BYTES, MAX_ENQUEUE_CHUNK_TASKS } from "../contracts/limits";
import { keyStatementsSql } from "./unique-keys";
import { chunkRows, countEnqueuedSql, insertRows, insertSql, type NewTask, type TaskField } from "./enqueue-rows";

/** What `enqueueStatements` prepares. */
export interface EnqueueStatements {
  /** The insert of every task, then their `enqueued` counters: to run in one batch, in this order. */
  statements: SQL[];
  /** Each task's id, in input order. */
  ids: string[];
  /** The earliest run_at among the tasks. */
  earliestRunAt: number;
}

/**
 * The statements of an enqueue that its caller runs inside a D1 batch of its own, beside its own writes:
 * all of them commit or none (a batch is D1's one transaction). They are an enqueue's own: one insert of the
 * tasks (`ON CONFLICT DO NOTHING`: a task whose dedupe key a live task holds is not created, and the batch
 * still commits) and its counters, in the statement order the batch must keep.
 *
 * Every task comes with its id, made by the caller for this enqueue (a slot id: src/shards/task-slot.ts), so
 * that the counters count exactly the rows the insert created. One statement's worth at most
 * (MAX_ENQUEUE_CHUNK_TASKS tasks and MAX_ENQUEUE_CHUNK_BYTES of JSON): the batch holds its database while it
 * runs, and D1 runs one statement at a time.
 *
 * @example
 * const { statements } = enqueueStatements("receipts", [{ id: slotId(0, now), payload }], now, tasksField);
 * await db.$client.batch([theirInsert, ...statements.map((s) => prepare(db, s))]);
 */
export function enqueueStatements(queue: string, input: NewTask[], now: number, field: TaskField): EnqueueStatements {
  if (input.length === 0) return { statements: [], ids: [], earliestRunAt: now };
  const rows = insertRows(input, now, field);
  const chunks = chunkRows(rows);
  if (chunks.length > 1) {
    throw new EdgeqError(
      "payload_too_large",
      `at most ${MAX_ENQUEUE_CHUNK_TASKS} tasks and ${MAX_ENQUEUE_CHUNK_BYTES} bytes of JSON go into one batch (got ${input.length} tasks): they are one statement of it`,
    );
  }
  const chunk = chunks[0]!;
  return {
    statements: [
      ...keyStatementsSql(queue, chunk, now),
      insertSql(queue, chunk, now, sql`true`),
      countEnqueuedSql(chunk, now),
    ],
    ids: rows.map((row) => row.id),
    earliestRunAt: Math.min(...rows.map((row) => row.run_at)),
  };
}
