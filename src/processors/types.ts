import type { z } from "zod";
import type { Env } from "../env";
import type { TaskArtifacts } from "../storage/artifacts";

/**
 * The bindings a processor may read: Workers AI, the models it runs and the webhook key. Not the
 * database or the bucket: a processor reaches those only through its context's calls.
 */
export type ProcessorEnv = Pick<Env, "AI" | "TTS_MODEL" | "TAG_MODEL" | "WEBHOOK_SECRET">;

/**
 * What a processor gets besides its payload. It has no database handle: its writes on the task go
 * through the same fenced engine calls an external worker uses (heartbeat, complete, fail), with the
 * task's lease token, and everything else it may touch is one of the narrow capabilities below.
 * src/dispatch/processor-context.ts builds it.
 */
export interface ProcessorContext {
  taskId: string;
  queue: string;
  type: string;
  group: string | null;
  /** 1 on the first attempt. */
  attempt: number;
  /** The bindings a processor may read (see ProcessorEnv). */
  env: ProcessorEnv;
  /** The injected clock (ms). */
  now: () => number;
  /** Aborted when the task is cancelled or its lease is lost: stop working. */
  signal: AbortSignal;
  /** Records progress (0-100) and a message on the task (a fenced heartbeat). */
  progress(percent: number, message?: string): Promise<void>;
  /** The checkpoint saved by an earlier attempt, or null. */
  checkpoint: unknown;
  /**
   * Saves a checkpoint that a retry of this task will receive, and optionally progress with it — one
   * fenced heartbeat, one D1 row written, however much it carries.
   */
  saveCheckpoint(value: unknown, progress?: { percent: number; message?: string }): Promise<void>;
  /** This task's artifacts in R2 (`tasks/{id}/{name}`): store one, or see whether one exists. */
  artifacts: TaskArtifacts;
  /** Results of completed tasks (e.g. the samples a calibration learns from), read through the engine. */
  results: CompletedResults;
  /**
   * The D1 database holding this task (its queue's shard), for a processor's own tables — a plugin's
   * migrations run on every shard (src/plugins/tag/schema.ts). The task tables are the engine's: touch
   * the task only through the calls above (`npm run check` refuses SQL on them outside src/engine).
   */
  db: D1Database;
}

/** Reads results of completed tasks of the queue's shard (src/engine/completed-results.ts). */
export interface CompletedResults {
  /**
   * The results of a group's newest completed tasks of `type`, newest first, as `pick` reads each (parsed
   * JSON; null skips it), until `limit` are kept or the tasks run out.
   */
  completed<T>(
    scope: { type: string; group: string },
    limit: number,
    pick: (result: unknown) => T | null,
  ): Promise<T[]>;
}

/** The engine a processor would use with a Worker's bindings; `note` says what is missing when unavailable. */
export interface ProcessorEngine {
  name: string;
  available: boolean;
  note?: string;
}

/**
 * A processor runs one task type in push mode. It returns the task's result (any JSON) or throws:
 * `PermanentError` (dead at once), `RetryAfterError` (retry no sooner than given), anything else
 * (a retryable failure, its message recorded in the task's error history).
 *
 * @example
 * export const echo: Processor<{ text: string }> = {
 *   type: "echo",
 *   payload: z.object({ text: z.string() }),
 *   async run(payload) { return { text: payload.text }; },
 * };
 */
export interface Processor<P = unknown> {
  /** The task type (or queue `processor` setting) it serves. */
  type: string;
  /** Validates the payload before `run`; an invalid payload is a permanent failure naming the field. */
  payload: z.ZodType<P>;
  /** Which engine this processor would use with these bindings, for `GET /v1/processors` and `npm start`,
   * and whether push mode may name it (`processorEngine` in ./registry.ts reads it).
   * Optional: without it the processor is listed as `{ engine: "built-in", available: true }`. */
  engine?(env: ProcessorEnv): ProcessorEngine;
  run(payload: P, ctx: ProcessorContext): Promise<unknown>;
}
