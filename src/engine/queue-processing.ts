import { sql, type SQL } from "drizzle-orm";
import type { QueueConfig } from "./queue-config";

/**
 * How a queue's tasks are run, as far as an enqueue checks them: its mode and, in push mode, its processor
 * (null: each task's own `type`). An enqueue to a push queue checks its tasks against the processors that
 * will run them (src/operations/enqueue-checks.ts), so that what it stores is what was checked, the insert
 * carries the processing it was checked for as a guard (`processingGuardSql`).
 */
export type QueueProcessing = Pick<QueueConfig, "mode" | "processor">;

/** A queue without a stored config: pull mode. */
export const PULL: QueueProcessing = { mode: "pull", processor: null };

/** The processing part of a queue's config. */
export function processingOf(config: QueueProcessing): QueueProcessing {
  return { mode: config.mode, processor: config.mode === "push" ? config.processor : null };
}

/** Whether two processings check tasks alike (a pull queue's processor setting checks nothing). */
export function sameProcessing(a: QueueProcessing, b: QueueProcessing): boolean {
  return a.mode === b.mode && (a.mode === "pull" || a.processor === b.processor);
}

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

/**
 * Thrown by an enqueue whose guard found the queue's processing changed since its tasks were checked
 * (`processing` is the stored one): nothing was inserted. The caller checks the tasks again and retries.
 */
export class ProcessingChanged extends Error {
  override readonly name = "ProcessingChanged";
  constructor(readonly processing: QueueProcessing) {
    super(
      `the queue's processing changed to ${processing.mode}${processing.processor ? ` (${processing.processor})` : ""}`,
    );
  }
}
