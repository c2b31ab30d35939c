import { sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { EdgeqError } from "../contracts/errors";
import type { StarvedKey, TaskStore } from "../engine/store";
import { taskStoreOn } from "../shards/shard-set";
import { mergeShardRows } from "../shards/cross-shard";
import {
  healthFigures,
  judgeHealth,
  type HealthFigures,
  type HealthReason,
  type HealthStatus,
  type LiveHealthFigures,
} from "./evaluate";
import { DEFAULTS_KEY, readHealthRows, recordTransition, writeHealthConfig, type HealthRow } from "./health-store";
import {
  DEFAULT_THRESHOLDS,
  mergeThresholds,
  thresholdsProblem,
  type Thresholds,
  type ThresholdsPatchInput,
} from "./thresholds";

/** Each queue's most starved key over its partitions' answers: the one whose next task has waited longest. */
function mostStarved(keys: StarvedKey[]): Map<string, StarvedKey> {
  const by = new Map<string, StarvedKey>();
  for (const key of keys) {
    const seen = by.get(key.queue);
    if (!seen || key.dueSince < seen.dueSince) by.set(key.queue, key);
  }
  return by;
}

/** One queue's health as evaluated now, with its alerting state. */
export interface QueueHealth {
  queue: string;
  status: HealthStatus;
  /** When the queue entered this status (null: ok since it was first seen). */
  since: number | null;
  reasons: HealthReason[];
  figures: HealthFigures;
  thresholds: Thresholds;
  alert: {
    /** The URL status changes go to (the queue's, else the defaults'), or null. */
    url: string | null;
    last_alert_at: number | null;
    last_alert_status: HealthStatus | null;
    /** The status of an alert still owed (being retried), or null. */
    pending_status: HealthStatus | null;
    attempts: number;
    next_attempt_at: number | null;
    last_error: string | null;
  };
}

function parseThresholds(json: string | null | undefined): ThresholdsPatchInput | null {
  return json ? (JSON.parse(json) as ThresholdsPatchInput) : null;
}

/** The thresholds a queue runs with: its own over the stored defaults over DEFAULT_THRESHOLDS. */
function effectiveThresholds(rows: Map<string, HealthRow>, queue: string): Thresholds {
  const defaults = mergeThresholds(DEFAULT_THRESHOLDS, parseThresholds(rows.get(DEFAULTS_KEY)?.thresholds));
  return queue === DEFAULTS_KEY ? defaults : mergeThresholds(defaults, parseThresholds(rows.get(queue)?.thresholds));
}

/**
 * How many due tasks of each queue health must count to judge `due_depth`: its largest level (warn or
 * critical, whichever is set) under its thresholds — a count that reaches it decides the check as the whole
 * count would. What the cron tick's walk of the live index counts to (src/engine/live-front.ts). One read
 * of the stored health rows.
 *
 * @example
 * const countFor = await dueCountsNeeded(db);
 * countFor("emails"); // 5_000 with the default thresholds
 */
export async function dueCountsNeeded(db: Db): Promise<(queue: string) => number> {
  const rows = await readHealthRows(db);
  return (queue) => {
    const { warn, critical } = effectiveThresholds(rows, queue).due_depth;
    return Math.max(warn ?? 0, critical ?? 0);
  };
}

/**
 * Evaluates the health of one queue, or of every queue (with live tasks, recent counters, a stored config
 * or a stored status). Task figures come from `taskStores` (every shard: the home database alone by default);
 * health rows and schedules from `db` (the home database). Reads live tasks through the live index
 * (`liveFigures`) — or takes them from `opts.live`, one list per shard, as the cron tick read them from the
 * live index's front — and the last hour of counters, never finished tasks. A status that changed is
 * recorded (compare and set: exactly once however many evaluations race) and, when the queue or the
 * defaults have an alert URL, an alert is queued for `deliverAlerts`. Writes nothing while statuses stay the
 * same — but for `advanceStarved` (the cron tick's evaluation): each flow queue's window of keys for starved
 * keys moves on (src/engine/flow-starved.ts; one row of `sweep_cursors` per flow queue whose window moved).
 *
 * @example
 * const [emails] = await evaluateHealth(db, Date.now(), { queue: "emails" });
 */
export async function evaluateHealth(
  db: Db,
  now: number,
  opts: { queue?: string; live?: LiveHealthFigures[][]; advanceStarved?: boolean } = {},
  taskStores: TaskStore[] = [taskStoreOn(db)],
): Promise<QueueHealth[]> {
  const only = opts.queue === undefined ? sql`` : sql` AND queue = ${opts.queue}`;
  const [live, recent, rows, configured, failing, starved] = await Promise.all([
    (opts.live ? Promise.resolve(opts.live) : Promise.all(taskStores.map((s) => s.liveFigures(now, opts.queue)))).then(
      (all: LiveHealthFigures[][]) => mergeShardRows(all, ["queue"], ["oldest_due_at"]),
    ),
    Promise.all(taskStores.map((s) => s.recentCounts(now, opts.queue))).then((all) => mergeShardRows(all, ["queue"])),
    readHealthRows(db, opts.queue === undefined ? undefined : [opts.queue]),
    opts.queue === undefined
      ? Promise.all(taskStores.map((s) => s.listConfiguredQueues())).then((all) => all.flat())
      : Promise.resolve([]),
    db.all<{ queue: string; n: number }>(
      sql`SELECT queue, count(*) AS n FROM schedules WHERE last_outcome = 'error'${only} GROUP BY queue`,
    ),
    // A key lives in one database: each queue's most starved key over its partitions is the longest-waiting.
    // The cron tick's evaluation moves each queue's window of keys on (every key in its turn); others only read.
    Promise.all(
      taskStores.map((s) => (opts.advanceStarved ? s.advanceStarvedKeys(now) : s.starvedKeys(now, opts.queue))),
    ).then((all) => mostStarved(all.flat())),
  ]);
  const failingBy = new Map(failing.map((f) => [f.queue, f.n]));
  const names =
    opts.queue !== undefined
      ? [opts.queue]
      : [
          ...new Set([
            ...live.map((f) => f.queue),
            ...recent.map((r) => r.queue),
            ...[...rows.keys()].filter((q) => q !== DEFAULTS_KEY),
            ...configured,
            ...failing.map((f) => f.queue),
          ]),
        ].sort();
  const liveBy = new Map(live.map((f) => [f.queue, f]));
  const recentBy = new Map(recent.map((r) => [r.queue, r]));
  const defaultsUrl = rows.get(DEFAULTS_KEY)?.alert_url ?? null;
  const results: QueueHealth[] = [];
  for (const queue of names) {
    const thresholds = effectiveThresholds(rows, queue);
    const figures = healthFigures(
      liveBy.get(queue),
      recentBy.get(queue),
      now,
      thresholds.failure_rate_min_outcomes,
      failingBy.get(queue) ?? 0,
      starved.get(queue),
    );
    const capped = (liveBy.get(queue)?.due_capped ?? 0) > 0;
    const { status, reasons } = judgeHealth(figures, thresholds, new Set(capped ? (["due_depth"] as const) : []));
    let row = rows.get(queue);
    const stored: HealthStatus = row?.status ?? "ok";
    const url = row?.alert_url ?? defaultsUrl;
    if (status !== stored) {
      const alert = url
        ? { id: crypto.randomUUID(), url, queue, status, previous: stored, at: now, reasons, figures }
        : null;
      if (await recordTransition(db, queue, stored, status, reasons, alert, now)) {
        row = (await readHealthRows(db, [queue])).get(queue);
      }
    }
    const pending = row?.alert_pending ? (JSON.parse(row.alert_pending) as { status: HealthStatus }) : null;
    results.push({
      queue,
      status,
      since: row?.status === status ? (row.status_since ?? null) : null,
      reasons,
      figures,
      thresholds,
      alert: {
        url,
        last_alert_at: row?.last_alert_at ?? null,
        last_alert_status: row?.last_alert_status ?? null,
        pending_status: pending?.status ?? null,
        attempts: row?.alert_attempts ?? 0,
        next_attempt_at: pending ? (row?.alert_next_at ?? null) : null,
        last_error: row?.last_alert_error ?? null,
      },
    });
  }
  return results;
}

/** A queue's (or the defaults') stored health config: its own thresholds overrides and alert URL. */
export interface HealthConfig {
  thresholds: ThresholdsPatchInput;
  alert_url: string | null;
}

/**
 * Reads the stored health config of a queue, or of the defaults (`*`).
 *
 * @example
 * const { alert_url } = await getHealthConfig(db, "*");
 */
export async function getHealthConfig(db: Db, queue: string): Promise<HealthConfig> {
  const row = (await readHealthRows(db, [queue])).get(queue);
  return { thresholds: parseThresholds(row?.thresholds) ?? {}, alert_url: row?.alert_url ?? null };
}

/**
 * Changes a queue's (or the defaults') health config: `thresholds` is merged into the stored overrides
 * level by level, `alert_url` replaces (null clears). Refused, with nothing stored, when the thresholds the
 * queue would run with put a warn above its critical.
 *
 * @example
 * await putHealthConfig(db, "emails", { thresholds: { due_depth: { warn: 50 } } }, Date.now());
 */
export async function putHealthConfig(
  db: Db,
  queue: string,
  patch: { thresholds?: ThresholdsPatchInput; alert_url?: string | null },
  now: number,
): Promise<HealthConfig> {
  const rows = await readHealthRows(db, queue === DEFAULTS_KEY ? [] : [queue]);
  const current = parseThresholds(rows.get(queue)?.thresholds) ?? {};
  const merged: ThresholdsPatchInput = { ...current };
  for (const [key, value] of Object.entries(patch.thresholds ?? {})) {
    const before = (current as Record<string, unknown>)[key];
    (merged as Record<string, unknown>)[key] =
      typeof value === "object" && value !== null ? { ...(before as object), ...value } : value;
  }
  const base =
    queue === DEFAULTS_KEY
      ? DEFAULT_THRESHOLDS
      : mergeThresholds(DEFAULT_THRESHOLDS, parseThresholds(rows.get(DEFAULTS_KEY)?.thresholds));
  const problem = thresholdsProblem(mergeThresholds(base, merged));
  if (problem) throw new EdgeqError("invalid_request", problem);
  await writeHealthConfig(
    db,
    queue,
    { thresholds: patch.thresholds === undefined ? undefined : JSON.stringify(merged), alert_url: patch.alert_url },
    now,
  );
  return getHealthConfig(db, queue);
}
