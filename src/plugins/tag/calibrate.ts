import * as z from "zod";
import { PermanentError } from "../../processors/errors";
import { tagCalibrations, type TagSample } from "./calibrations";
import type { Processor } from "../../processors/types";

/** Longest group name: the same 128 characters the enqueue API accepts for a task's group. */
export const MAX_GROUP_CHARS = 128;

/** The quantile used when the payload does not say: the median, so a tag is kept when it scores at
 * least as well as it typically does in this group. */
export const DEFAULT_QUANTILE = 0.5;

/** Fewest results a tag must appear in to get a threshold. A quantile of one or two scores is noise. */
export const DEFAULT_MIN_SAMPLES = 3;

export interface CalibratePayload {
  group?: string;
  quantile: number;
  min_samples: number;
}

export interface CalibrateResult {
  group: string;
  /** How many completed `tag` results the thresholds were computed from. */
  samples: number;
  thresholds: Record<string, number>;
}

/** Slack for floating-point error in `quantile * n` (0.3 * 10 is 3.0000000000000004, not 3). */
const RANK_EPSILON = 1e-9;

/**
 * The `q`-quantile of `values` by the nearest-rank method: sort ascending and take the value of rank
 * ⌈q·n⌉ (1-based; rank 1 when q·n is 0). It is the smallest observed value with at least q·n values at
 * or below it — always an observed score, never an interpolation, so `score >= threshold` keeps the
 * sample that sits exactly on the quantile, and keeps at least (1 − q)·n of the n samples.
 * Examples: [0.2, 0.4, 0.6, 0.8] → q 0.5: 0.4, q 0.75: 0.6, q 0: 0.2, q 1: 0.8.
 *
 * @example
 * quantile([0.8, 0.2, 0.6, 0.4], 0.5); // 0.4
 */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) throw new RangeError("quantile of no values");
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil(q * sorted.length - RANK_EPSILON));
  return sorted[Math.min(rank, sorted.length) - 1]!;
}

/**
 * Per-tag thresholds from tag samples: for every tag present in at least `minSamples` samples, the
 * `q`-quantile of its scores (one score per sample: a tag listed twice in one sample counts its best).
 *
 * @example
 * computeThresholds([[{ tag: "jazz", score: 1 }], [{ tag: "jazz", score: 0.5 }]], 0.5, 2); // { jazz: 0.5 }
 */
export function computeThresholds(
  samples: readonly TagSample[],
  q: number,
  minSamples: number,
): Record<string, number> {
  const scores = new Map<string, number[]>();
  for (const sample of samples) {
    const best = new Map<string, number>();
    for (const { tag, score } of sample) best.set(tag, Math.max(score, best.get(tag) ?? -Infinity));
    for (const [tag, score] of best) {
      const list = scores.get(tag);
      if (list) list.push(score);
      else scores.set(tag, [score]);
    }
  }
  const thresholds: Record<string, number> = {};
  for (const tag of [...scores.keys()].sort()) {
    const list = scores.get(tag)!;
    if (list.length >= minSamples) thresholds[tag] = quantile(list, q);
  }
  return thresholds;
}

/**
 * `calibrate`: learns per-tag score thresholds for a group from its completed `tag` tasks, and stores them
 * so that later `tag` tasks of the group drop tags scoring below their tag's usual score.
 *
 * @example
 * // POST /v1/queues/docs/tasks  { "tasks": [{ "type": "calibrate", "payload": { "group": "library-1" } }] }
 * // result: { group: "library-1", samples: 42, thresholds: { jazz: 0.5, piano: 0.33 } }
 */
export const calibrateProcessor: Processor<CalibratePayload> = {
  type: "calibrate",
  payload: z.object({
    group: z.string().min(1).max(MAX_GROUP_CHARS).optional(),
    quantile: z.number().min(0).max(1).default(DEFAULT_QUANTILE),
    min_samples: z.number().int().min(1).default(DEFAULT_MIN_SAMPLES),
  }),
  engine: () => ({ name: "built-in", available: true }),
  async run(payload, ctx): Promise<CalibrateResult> {
    const group = payload.group ?? ctx.group;
    if (group === undefined || group === null) {
      throw new PermanentError("calibrate needs a group: give payload.group or enqueue the task with a group");
    }
    const calibrations = tagCalibrations(ctx);
    const samples = await calibrations.readSamples(group);
    if (samples.length === 0) {
      // Writing empty thresholds would erase an earlier calibration (e.g. after retention pruned the tasks).
      throw new PermanentError(`group "${group}" has no completed tag tasks to calibrate from`);
    }
    ctx.signal.throwIfAborted();
    const thresholds = computeThresholds(samples, payload.quantile, payload.min_samples);
    await calibrations.putThresholds(group, thresholds, samples.length);
    return { group, samples: samples.length, thresholds };
  },
};
