import * as z from "zod";
import { component } from "../contracts/component";

/** The checks health runs, each with a warn and a critical level. */
export const CHECKS = [
  "due_depth",
  "oldest_due_age_s",
  "lease_expired",
  "overrun",
  "failure_rate_5m",
  "failure_rate_15m",
  "dead_1h",
  "schedule_errors",
  "starved_key_age_s",
] as const;
export type Check = (typeof CHECKS)[number];

/** The rate checks: a fraction of attempt outcomes, from 0 to 1. */
const RATES: readonly Check[] = ["failure_rate_5m", "failure_rate_15m"];

/** One check's levels: a figure at or above `warn` is warn, at or above `critical` is critical; null turns
 * the level off. */
export interface Levels {
  warn: number | null;
  critical: number | null;
}

export type Thresholds = Record<Check, Levels> & {
  /** Failure rates count only once a window holds this many outcomes (completions + failed attempts), so
   * one failure in a quiet minute is not a 100 % failure rate. */
  failure_rate_min_outcomes: number;
};

/**
 * Defaults for a queue without its own thresholds (and no `*` defaults stored):
 * - due_depth 1,000 / 5,000 due tasks: a backlog workers should clear within seconds at edgeq's rates. The
 *   minute's cron tick counts each queue's due tasks up to its largest level, one index entry each: 5,000
 *   keeps a tick at 1,000,000 pending under 10,000 rows read with the tick's own reads (the growth section
 *   of `npm run bench`, docs/benchmarks.md section 5). A higher level costs that many reads a minute, per queue with
 *   such a backlog; `oldest_due_age_s` watches a backlog of any size for the price of one read.
 * - oldest_due_age_s 5 min / 30 min: a due task waiting this long means workers are missing or stuck.
 * - lease_expired 1 / 25: any task past its lease means a worker died or stopped heart-beating.
 * - overrun 1 / 25: tasks running past the queue's max_run_s (only for queues that set one).
 * - failure rates 10 % / 50 % over 5 min, 5 % / 25 % over 15 min, counted from 10 outcomes.
 * - dead_1h 1 / 100: any task giving up is worth a look; a hundred is an incident.
 * - schedule_errors 1 / off: a schedule of the queue whose last firing could not enqueue its task (the error
 *   is on the schedule) — worth a warning, and the alert that comes with it; it clears on the next success.
 * - starved_key_age_s 5 min / off (flow control): a key with due tasks, room to start them and nothing running
 *   for 5 minutes is one the leases pass over (a larger key's backlog without fair shares, a higher priority):
 *   the warning names it; critical is left to oldest_due_age_s, which the same wait also raises.
 */
export const DEFAULT_THRESHOLDS: Thresholds = {
  due_depth: { warn: 1000, critical: 5000 },
  oldest_due_age_s: { warn: 300, critical: 1800 },
  lease_expired: { warn: 1, critical: 25 },
  overrun: { warn: 1, critical: 25 },
  failure_rate_5m: { warn: 0.1, critical: 0.5 },
  failure_rate_15m: { warn: 0.05, critical: 0.25 },
  dead_1h: { warn: 1, critical: 100 },
  schedule_errors: { warn: 1, critical: null },
  starved_key_age_s: { warn: 300, critical: null },
  failure_rate_min_outcomes: 10,
};

function levelsSchema(check: Check) {
  const level = RATES.includes(check)
    ? z.number().min(0).max(1).nullable()
    : z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).nullable();
  return z
    .object({ warn: level.optional(), critical: level.optional() })
    .strict()
    .meta({ description: `${check}: warn and critical levels (null turns one off)` });
}

/** Threshold overrides as a caller sends them: any subset of checks and levels. */
export const ThresholdsPatch = z
  .object({
    ...(Object.fromEntries(CHECKS.map((c) => [c, levelsSchema(c).optional()])) as Record<
      Check,
      z.ZodOptional<ReturnType<typeof levelsSchema>>
    >),
    failure_rate_min_outcomes: z.number().int().min(1).max(1_000_000).optional(),
  })
  .strict()
  .meta(component("HealthThresholds"));
export type ThresholdsPatchInput = z.infer<typeof ThresholdsPatch>;

/** `base` with `patch`'s levels over it. */
export function mergeThresholds(base: Thresholds, patch: ThresholdsPatchInput | null | undefined): Thresholds {
  if (!patch) return base;
  const merged: Thresholds = { ...base };
  for (const check of CHECKS) {
    const levels = patch[check];
    if (levels) merged[check] = { ...base[check], ...levels };
  }
  if (patch.failure_rate_min_outcomes !== undefined) merged.failure_rate_min_outcomes = patch.failure_rate_min_outcomes;
  return merged;
}

/** Why effective thresholds are inconsistent (a warn above its critical), naming the field; null when fine. */
export function thresholdsProblem(t: Thresholds): string | null {
  for (const check of CHECKS) {
    const { warn, critical } = t[check];
    if (warn != null && critical != null && warn > critical) {
      return `thresholds.${check}: warn (${warn}) must not be above critical (${critical})`;
    }
  }
  return null;
}
