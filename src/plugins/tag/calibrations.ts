import type { ProcessorContext } from "../../processors/types";
import { getThresholds, putThresholds } from "./calibration-store";
import { storedTagResultSchema, type ScoredTag } from "./tag-result";

/**
 * What tag calibration reads and keeps. Samples are completed `tag` results, read through the context's
 * `results` (the engine owns the task tables); thresholds are this plugin's own table
 * (calibration-store.ts) in the task's database (`ctx.db`).
 */

/** Most completed `tag` results one calibration reads (the newest). The distribution of recent scores
 * is what matters, and it bounds the work: at ~50 tags per result, 1,000 results are ~100,000 scores. */
export const MAX_CALIBRATION_RESULTS = 1_000;

/** The tags of one completed `tag` result: kept and dropped alike. */
export type TagSample = ScoredTag[];

/**
 * A completed task's result read as a tag sample — its `tags` together with its `dropped`, so that
 * thresholds in force when it ran do not bias a new calibration — or null when it is not a tag result.
 *
 * @example
 * tagSample({ engine: "local", tags: [{ tag: "jazz", score: 1 }], dropped: [], calibrated: false });
 * // [{ tag: "jazz", score: 1 }]
 */
export function tagSample(result: unknown): TagSample | null {
  const parsed = storedTagResultSchema.safeParse(result);
  if (!parsed.success) return null;
  return [...parsed.data.tags, ...parsed.data.dropped];
}

/** A group's calibration, as `tag` and `calibrate` use it. */
export interface TagCalibrations {
  /**
   * The samples of the group's newest completed `tag` tasks, newest first (at most `limit`, by default
   * MAX_CALIBRATION_RESULTS); results that are not tag results are skipped.
   */
  readSamples(group: string, limit?: number): Promise<TagSample[]>;
  /** The group's thresholds (tag -> minimum score kept), or null when it was never calibrated. */
  getThresholds(group: string): Promise<Record<string, number> | null>;
  /** Stores the group's thresholds, learnt from `samples` results, replacing any earlier calibration. */
  putThresholds(group: string, thresholds: Readonly<Record<string, number>>, samples: number): Promise<void>;
}

/**
 * The calibrations of a running task's database: samples through `ctx.results`, thresholds in the
 * plugin's table, times from the task's clock.
 *
 * @example
 * const thresholds = await tagCalibrations(ctx).getThresholds("library-1");
 */
export function tagCalibrations(ctx: Pick<ProcessorContext, "results" | "db" | "now">): TagCalibrations {
  return {
    readSamples: (group, limit = MAX_CALIBRATION_RESULTS) =>
      ctx.results.completed({ type: "tag", group }, limit, tagSample),
    getThresholds: (group) => getThresholds(ctx.db, group),
    putThresholds: (group, thresholds, samples) => putThresholds(ctx.db, group, thresholds, samples, ctx.now()),
  };
}
