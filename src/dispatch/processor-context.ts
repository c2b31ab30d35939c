import type { Db } from "../db/client";
import type { TaskRow } from "../db/schema";
import { collectCompletedResults } from "../engine/completed-results";
import { getThresholds, putThresholds } from "../engine/tag-calibrations";
import type { Env } from "../env";
import { MAX_CALIBRATION_RESULTS, tagSample, type TagCalibrations } from "../processors/tag-calibrations";
import type { ProcessorContext, ProcessorEnv } from "../processors/types";
import { taskArtifacts } from "../storage/artifacts";

/**
 * The only bindings a processor is handed (the ProcessorEnv keys): the database and the bucket stay with
 * the dispatcher, so a processor cannot reach around its context.
 *
 * @example
 * processorEnv(env); // { AI, TTS_MODEL, TAG_MODEL, WEBHOOK_SECRET }
 */
export function processorEnv(env: ProcessorEnv): ProcessorEnv {
  return { AI: env.AI, TTS_MODEL: env.TTS_MODEL, TAG_MODEL: env.TAG_MODEL, WEBHOOK_SECRET: env.WEBHOOK_SECRET };
}

/**
 * Tag calibration bound to the database and the clock: the engine's queries behind `ctx.calibrations`.
 *
 * @example
 * const samples = await tagCalibrations(db, Date.now).readSamples("library-1");
 */
export function tagCalibrations(db: Db, now: () => number): TagCalibrations {
  return {
    readSamples: (group, limit = MAX_CALIBRATION_RESULTS) =>
      collectCompletedResults(db, { type: "tag", group }, limit, tagSample),
    getThresholds: (group) => getThresholds(db, group),
    putThresholds: (group, thresholds, samples) => putThresholds(db, group, thresholds, samples, now()),
  };
}

/** A fenced heartbeat of the running task, carrying progress and/or a checkpoint. */
export type Beat = (fields: { progress?: number; progressMessage?: string; checkpoint?: unknown }) => Promise<void>;

/** What `processorContext` binds: the leased task and the dispatcher's own handles. */
export interface ProcessorContextDeps {
  db: Db;
  env: Env;
  now: () => number;
  signal: AbortSignal;
  /** Heartbeats the task (fenced by its lease token); aborts `signal` when the task is cancelled or lost. */
  beat: Beat;
}

/**
 * The context a processor runs one leased task with: progress and checkpoints as fenced heartbeats,
 * the task's own artifacts, tag calibration, and the bindings of ProcessorEnv — no database handle.
 *
 * @example
 * const ctx = processorContext(task, { db, env, now, signal: abort.signal, beat });
 */
export function processorContext(task: TaskRow, deps: ProcessorContextDeps): ProcessorContext {
  const { db, env, now, beat } = deps;
  return {
    taskId: task.id,
    queue: task.queue,
    type: task.type,
    group: task.groupKey,
    attempt: task.attempts,
    env: processorEnv(env),
    now,
    signal: deps.signal,
    checkpoint: task.checkpoint == null ? null : JSON.parse(task.checkpoint),
    progress: (percent, message) => beat({ progress: clampPercent(percent), progressMessage: message }),
    saveCheckpoint: (value, progress) =>
      beat({
        checkpoint: value,
        progress: progress === undefined ? undefined : clampPercent(progress.percent),
        progressMessage: progress?.message,
      }),
    artifacts: taskArtifacts(env.ARTIFACTS, task.id),
    calibrations: tagCalibrations(db, now),
  };
}

function clampPercent(percent: number): number {
  return Math.max(0, Math.min(100, Math.round(percent)));
}
