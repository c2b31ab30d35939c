import type { z } from "zod";
import type { Db } from "../db/client";
import type { Env } from "../env";

/** A stored artifact, as a processor's result lists it. */
export interface ArtifactInfo {
  name: string;
  content_type: string;
  size: number;
}

/**
 * What a processor gets besides its payload. Every write it makes goes through the same fenced engine
 * calls an external worker uses (heartbeat, complete, fail), with the task's lease token.
 */
export interface ProcessorContext {
  taskId: string;
  queue: string;
  type: string;
  group: string | null;
  /** 1 on the first attempt. */
  attempt: number;
  /** The Worker's bindings: AI, ARTIFACTS, DB, secrets. */
  env: Env;
  db: Db;
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
  /** Stores an artifact of this task in R2 (`tasks/{id}/{name}`). */
  putArtifact(
    name: string,
    body: ArrayBuffer | Uint8Array | ReadableStream,
    contentType: string,
  ): Promise<ArtifactInfo>;
  /** Whether an artifact of this task already exists (to resume without redoing work). */
  headArtifact(name: string): Promise<ArtifactInfo | null>;
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
  /** Which engine this processor would use with these bindings, for `GET /v1/processors` and `npm start`. */
  engine(env: Env): { name: string; available: boolean; note?: string };
  run(payload: P, ctx: ProcessorContext): Promise<unknown>;
}
