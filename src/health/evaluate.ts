import type { LiveFigures, RecentCounts, StarvedKey } from "../engine/store";
import { CHECKS, type Check, type Thresholds } from "./thresholds";

import { HEALTH_STATUSES, type HealthStatus } from "./health-status";

export { HEALTH_STATUSES, type HealthStatus };

/** What health looks at for one queue, at one time. */
export interface HealthFigures {
  due_depth: number;
  oldest_due_age_s: number;
  lease_expired: number;
  overrun: number;
  /** Null while the window holds fewer outcomes than `failure_rate_min_outcomes`. */
  failure_rate_5m: number | null;
  failure_rate_15m: number | null;
  outcomes_5m: number;
  outcomes_15m: number;
  dead_1h: number;
  /** Schedules into this queue whose last firing failed to enqueue (src/schedules/). */
  schedule_errors: number;
  /** Flow control: seconds the most starved key's next task has been due (src/engine/flow-starved.ts), 0: none. */
  starved_key_age_s: number;
  /** That key, or null. */
  starved_key: string | null;
}

/** One check past a level. */
export interface HealthReason {
  check: Check;
  status: Exclude<HealthStatus, "ok">;
  value: number;
  threshold: number;
  message: string;
}

const DESCRIBE: Record<Check, (v: number, f: HealthFigures) => string> = {
  due_depth: (v) => `${v} tasks are due and waiting`,
  oldest_due_age_s: (v) => `the oldest due task has waited ${Math.round(v)} s`,
  lease_expired: (v) => `${v} processing tasks are past their lease with no heartbeat`,
  overrun: (v) => `${v} tasks have run longer than the queue's max_run_s`,
  failure_rate_5m: (v) => `${Math.round(v * 100)} % of attempts failed in the last 5 minutes`,
  failure_rate_15m: (v) => `${Math.round(v * 100)} % of attempts failed in the last 15 minutes`,
  dead_1h: (v) => `${v} tasks went dead in the last hour`,
  schedule_errors: (v) => `${v} schedules could not enqueue their task (see GET /v1/schedules)`,
  starved_key_age_s: (v, f) =>
    `key ${JSON.stringify(f.starved_key)} has had a task due for ${Math.round(v)} s, room to start it and nothing running`,
};

/** What health reads of a queue's live tasks: from `liveFigures` (a request), or from the cron tick's walk of
 * the live index's front (src/engine/live-front.ts), which counts due tasks only up to the largest
 * due-depth level (`dueCountsNeeded`) and then sets `due_capped` (above 0: `due` is a lower bound; a number
 * so that shards' rows add up). */
export type LiveHealthFigures = Pick<LiveFigures, "queue" | "due" | "oldest_due_at" | "lease_expired" | "overrun"> & {
  due_capped?: number;
};

/** The figures of one queue from its live tasks and recent counters (either may be absent: none). */
export function healthFigures(
  live: LiveHealthFigures | undefined,
  recent: RecentCounts | undefined,
  now: number,
  minOutcomes: number,
  scheduleErrors = 0,
  starved: StarvedKey | undefined = undefined,
): HealthFigures {
  const rate = (failed: number, outcomes: number) =>
    outcomes >= minOutcomes && outcomes > 0 ? failed / outcomes : null;
  return {
    due_depth: live?.due ?? 0,
    oldest_due_age_s: live?.oldest_due_at == null ? 0 : Math.max(0, (now - live.oldest_due_at) / 1000),
    lease_expired: live?.lease_expired ?? 0,
    overrun: live?.overrun ?? 0,
    failure_rate_5m: rate(recent?.failed_5m ?? 0, recent?.outcomes_5m ?? 0),
    failure_rate_15m: rate(recent?.failed_15m ?? 0, recent?.outcomes_15m ?? 0),
    outcomes_5m: recent?.outcomes_5m ?? 0,
    outcomes_15m: recent?.outcomes_15m ?? 0,
    dead_1h: recent?.dead_1h ?? 0,
    schedule_errors: scheduleErrors,
    starved_key_age_s: starved ? Math.max(0, (now - starved.dueSince) / 1000) : 0,
    starved_key: starved?.key ?? null,
  };
}

/**
 * A queue's status from its figures: the worst level any check reaches, with one reason per check past a
 * level (critical named over warn); a check in `atLeast` had its figure counted only up to its levels, and
 * its message says "at least". Pure: the same figures and thresholds always give the same answer.
 *
 * @example
 * const { status, reasons } = judgeHealth(figures, DEFAULT_THRESHOLDS);
 */
export function judgeHealth(
  figures: HealthFigures,
  thresholds: Thresholds,
  atLeast: ReadonlySet<Check> = new Set(),
): { status: HealthStatus; reasons: HealthReason[] } {
  const reasons: HealthReason[] = [];
  for (const check of CHECKS) {
    const value = figures[check];
    if (value == null) continue;
    const { warn, critical } = thresholds[check];
    const level: HealthReason["status"] | null =
      critical != null && value >= critical ? "critical" : warn != null && value >= warn ? "warn" : null;
    if (!level) continue;
    const threshold = (level === "critical" ? critical : warn)!;
    reasons.push({
      check,
      status: level,
      value,
      threshold,
      message: `${atLeast.has(check) ? "at least " : ""}${DESCRIBE[check](value, figures)} (${level} at ${threshold})`,
    });
  }
  const status: HealthStatus = reasons.some((r) => r.status === "critical")
    ? "critical"
    : reasons.length > 0
      ? "warn"
      : "ok";
  return { status, reasons };
}

/** The worse of two statuses. */
export function worse(a: HealthStatus, b: HealthStatus): HealthStatus {
  return HEALTH_STATUSES.indexOf(a) >= HEALTH_STATUSES.indexOf(b) ? a : b;
}
