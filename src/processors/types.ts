import type { z } from "zod";
import type { DependenciesResponse } from "../contracts/api";
import type { Env } from "../env";
import type { TaskArtifacts } from "../storage/artifacts";

/**
 * The bindings the built-in processors read (src/plugins/): Workers AI, the models it runs and the webhook
 * key. A processor's `ctx.env` is the Worker's whole env; this is the part of it those plugins need.
 */
export type ProcessorEnv = Pick<Env, "AI" | "TTS_MODEL" | "TAG_MODEL" | "WEBHOOK_SECRET">;

/**
 * What a processor gets besides its payload. Its writes on the task go through the same fenced engine
 * calls an external worker uses (heartbeat, complete, fail), with the task's lease token; the Worker's
 * bindings are in `env`, and `db` is the database holding the task, for the processor's own tables.
 * src/dispatch/processor-context.ts builds it.
 *
 * `E` is the type of the Worker's env as the processor's author declares it (`Processor<Payload, Env>`):
 * edgeq's own bindings by default; yours, e.g. `interface Env extends EdgeqEnv { UPLOADS: R2Bucket }` or the
 * one `wrangler types` writes. It is a claim about the Worker's wrangler.toml that nothing checks at run time.
 */
export interface ProcessorContext<E = Env> {
  /** The task's id: the one its enqueue answered, and that `GET /v1/tasks/{id}` and the events name
   * (the same on every attempt). */
  taskId: string;
  queue: string;
  type: string;
  group: string | null;
  /** 1 on the first attempt. */
  attempt: number;
  /** The Worker's env: every binding, variable and secret it has (yours, and edgeq's: `DB`, `ARTIFACTS`, …).
   * The task tables in its databases are the engine's: touch the task only through the calls below. */
  env: E;
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
  /**
   * A page of the tasks this one depends on (a join's fan-out, its `depends_on`), in id order, each with
   * its state and result — the answer of GET /v1/tasks/{id}/dependencies: at most 100 a page (the default),
   * a result inline up to 16 KiB (`null` over it, its size in `result_bytes`; read it with the task). Pass
   * `next_cursor` back as `cursor` for the next page.
   */
  dependencies(page?: { cursor?: string; limit?: number }): Promise<DependencyPage>;
  /** Results of completed tasks (e.g. the samples a calibration learns from), read through the engine. */
  results: CompletedResults;
  /**
   * The D1 database holding this task (its queue's shard), for a processor's own tables — a plugin's
   * migrations run on every shard (src/plugins/tag/schema.ts). The task tables are the engine's: touch
   * the task only through the calls above (`npm run check` refuses SQL on them outside src/engine). Your
   * tables get here through your migrations folder (docs/processors.md, "Your own tables").
   */
  db: D1Database;
}

/** A page of a task's dependencies with their states and results (src/contracts/api.ts). */
export type DependencyPage = z.infer<typeof DependenciesResponse>;

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
 * (a retryable failure, its message recorded in the task's error history). `P` is its payload (what
 * `payload` parses), `E` the Worker's env as `ctx.env` and `engine` see it (see ProcessorContext).
 *
 * @example
 * import type { Env as EdgeqEnv } from "edgeq";
 * interface Env extends EdgeqEnv { UPLOADS: R2Bucket }
 * export const archive: Processor<{ key: string; text: string }, Env> = {
 *   type: "archive",
 *   payload: z.object({ key: z.string(), text: z.string() }),
 *   async run(payload, ctx) {
 *     await ctx.env.UPLOADS.put(payload.key, payload.text);
 *     return { key: payload.key };
 *   },
 * };
 */
export interface Processor<P = unknown, E = Env> {
  /** The task type (or queue `processor` setting) it serves. */
  type: string;
  /** Validates the payload before `run`, and at enqueue to a push queue it serves (a 400 naming the field,
   * nothing stored); an invalid payload met at run time is a permanent failure naming the field. */
  payload: z.ZodType<P>;
  /** Which engine this processor would use with these bindings, for `GET /v1/processors` and `npm start`,
   * and whether push mode may name it (`processorEngine` in ./registry.ts reads it).
   * Optional: without it the processor is listed as `{ engine: "built-in", available: true }`. */
  engine?(env: E): ProcessorEngine;
  run(payload: P, ctx: ProcessorContext<E>): Promise<unknown>;
}

/**
 * Any processor, whatever its payload and env types: what a Worker's processor list holds. Each processor
 * is type-checked where it is written, against the env type its author gave it; the list takes them all,
 * since they all run with the one env the Worker has (`never` here: no env type is required of them).
 */
export type AnyProcessor = Processor<unknown, never>;
