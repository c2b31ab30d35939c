import type { NewTask, TaskField } from "./enqueue-rows";

/** An enqueue prepared for a batch of the caller's own (`CallerBatches.prepareEnqueue`). */
export interface PreparedStatements {
  /** The enqueue's statements, prepared on the store's D1 database: to run in one batch there, in this order,
   * anywhere among the caller's own. */
  statements: D1PreparedStatement[];
  /** Each task's id, in input order. */
  ids: string[];
  /** The earliest run_at among the tasks. */
  earliestRunAt: number;
}

/**
 * Enqueues that commit with a caller's own writes (`prepareEnqueue`, src/operations/batch-enqueue.ts): the
 * store hands out its enqueue as statements of the database it keeps tasks in, and the caller runs them in a
 * batch of that database with its own — all commit or none. Only a store kept in a D1 database the caller
 * can batch on offers this.
 */
export interface CallerBatches {
  /**
   * The statements that enqueue `tasks` (each with its id, made by the caller for this enqueue, so the
   * counters count exactly what the insert created) and count them, at most one statement's worth
   * (MAX_ENQUEUE_CHUNK_TASKS tasks, MAX_ENQUEUE_CHUNK_BYTES): more is `payload_too_large`. A task whose dedupe
   * or unique key a live task holds is not created, and the batch still commits. Refusals name the field as
   * `field` does; nothing is written until the caller runs the batch.
   */
  prepareEnqueue(queue: string, tasks: NewTask[], now: number, field: TaskField): PreparedStatements;
}
