import { sql, type SQL } from "drizzle-orm";
import { PULL, type QueueProcessing } from "../contracts/queue-processing";

export {
  PULL,
  ProcessingChanged,
  processingOf,
  sameProcessing,
  type QueueProcessing,
} from "../contracts/queue-processing";

/**
 * SQL that is true while the queue's stored config runs its tasks as `expected`: what an enqueue's insert
 * carries in its WHERE, so a config written between the check and the insert stores nothing unchecked.
 * One primary-key probe of `queues`; no row is a pull queue.
 */
export function processingGuardSql(queue: string, expected: QueueProcessing): SQL {
  if (expected.mode === "pull") {
    return sql`NOT EXISTS (SELECT 1 FROM queues WHERE name = ${queue} AND mode = 'push')`;
  }
  return sql`EXISTS (SELECT 1 FROM queues WHERE name = ${queue} AND mode = 'push' AND processor IS ${expected.processor})`;
}

/** The statement reading a queue's processing (no row: none stored), for the batch that carries the guard. */
export function storedProcessingSql(queue: string): SQL {
  return sql`SELECT mode, processor FROM queues WHERE name = ${queue}`;
}

/** The processing `storedProcessingSql` read. */
export function processingFromRows(rows: Array<{ mode: string | null; processor: string | null }>): QueueProcessing {
  const row = rows[0];
  return row?.mode === "push" ? { mode: "push", processor: row.processor } : PULL;
}
