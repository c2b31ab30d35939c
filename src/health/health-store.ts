import { sql } from "drizzle-orm";
import type { Db } from "../db/client";
import type { HealthFigures, HealthReason, HealthStatus } from "./evaluate";

/** The row key holding the defaults every queue inherits. */
export const DEFAULTS_KEY = "*";

/** One stored health row (see `queueHealth` in src/db/schema.ts), as SQL returns it. */
export interface HealthRow {
  queue: string;
  thresholds: string | null;
  alert_url: string | null;
  status: HealthStatus;
  status_since: number | null;
  reasons: string;
  alert_pending: string | null;
  alert_attempts: number;
  alert_next_at: number | null;
  last_alert_at: number | null;
  last_alert_status: HealthStatus | null;
  last_alert_error: string | null;
}

/** An alert owed to a receiver: what is POSTed (less `url`), with an id that fences its delivery. */
export interface PendingAlert {
  id: string;
  url: string;
  queue: string;
  status: HealthStatus;
  previous: HealthStatus;
  at: number;
  reasons: HealthReason[];
  figures: HealthFigures;
}

/**
 * Stored health rows: of the given queues and the defaults row, or all when `queues` is undefined.
 *
 * @example
 * const rows = await readHealthRows(db, ["emails"]);
 */
export async function readHealthRows(db: Db, queues?: string[]): Promise<Map<string, HealthRow>> {
  const only =
    queues === undefined
      ? sql``
      : sql` WHERE queue = ${DEFAULTS_KEY} OR queue IN (SELECT value FROM json_each(${JSON.stringify(queues)}))`;
  const rows = await db.all<HealthRow>(sql`SELECT * FROM queue_health${only}`);
  return new Map(rows.map((r) => [r.queue, r]));
}

/**
 * Stores thresholds and/or the alert URL of a queue (or of the defaults, `*`): `undefined` keeps what is
 * stored, `null` clears it. The caller has validated both. One upsert.
 *
 * @example
 * await writeHealthConfig(db, "emails", { alert_url: "https://hooks.example.com/edgeq" }, Date.now());
 */
export async function writeHealthConfig(
  db: Db,
  queue: string,
  config: { thresholds?: string | null; alert_url?: string | null },
  now: number,
): Promise<void> {
  const keepThresholds = config.thresholds === undefined ? 1 : 0;
  const keepUrl = config.alert_url === undefined ? 1 : 0;
  await db.run(sql`INSERT INTO queue_health (queue, thresholds, alert_url, updated_at)
    VALUES (${queue}, ${config.thresholds ?? null}, ${config.alert_url ?? null}, ${now})
    ON CONFLICT (queue) DO UPDATE SET
      thresholds = CASE WHEN ${keepThresholds} THEN queue_health.thresholds ELSE excluded.thresholds END,
      alert_url = CASE WHEN ${keepUrl} THEN queue_health.alert_url ELSE excluded.alert_url END,
      updated_at = excluded.updated_at`);
}

/**
 * Moves a queue's stored status from `from` to `to` — only if it is still `from` (compare and set), so two
 * evaluations racing over one change record it, and queue its alert, exactly once. A queue with no row is
 * `ok`. With `alert`, the alert replaces any still undelivered (the newer status is what matters; it names
 * the one before). Returns whether this call made the change.
 *
 * @example
 * const changed = await recordTransition(db, "emails", "ok", "warn", reasons, alert, Date.now());
 */
export async function recordTransition(
  db: Db,
  queue: string,
  from: HealthStatus,
  to: HealthStatus,
  reasons: HealthReason[],
  alert: PendingAlert | null,
  now: number,
): Promise<boolean> {
  const reasonsJson = JSON.stringify(reasons);
  const alertJson = alert ? JSON.stringify(alert) : null;
  const rows = await db.all<{ queue: string }>(sql`INSERT INTO queue_health
      (queue, status, status_since, reasons, alert_pending, alert_attempts, alert_next_at, updated_at)
    SELECT ${queue}, ${to}, ${now}, ${reasonsJson}, ${alertJson}, 0, ${alert ? now : null}, ${now}
    WHERE ${from} = 'ok'
    ON CONFLICT (queue) DO UPDATE SET
      status = excluded.status, status_since = excluded.status_since, reasons = excluded.reasons,
      alert_pending = coalesce(excluded.alert_pending, queue_health.alert_pending),
      alert_attempts = CASE WHEN excluded.alert_pending IS NULL THEN queue_health.alert_attempts ELSE 0 END,
      alert_next_at = CASE WHEN excluded.alert_pending IS NULL THEN queue_health.alert_next_at ELSE ${now} END,
      updated_at = excluded.updated_at
    WHERE queue_health.status = ${from}
    RETURNING queue`);
  if (rows.length > 0) return true;
  if (from === "ok") return false;
  // `from` is not ok, so the row exists: the INSERT … SELECT above inserted nothing and updated nothing.
  const updated = await db.all<{ queue: string }>(sql`UPDATE queue_health SET
      status = ${to}, status_since = ${now}, reasons = ${reasonsJson},
      alert_pending = coalesce(${alertJson}, alert_pending),
      alert_attempts = CASE WHEN ${alertJson} IS NULL THEN alert_attempts ELSE 0 END,
      alert_next_at = CASE WHEN ${alertJson} IS NULL THEN alert_next_at ELSE ${now} END,
      updated_at = ${now}
    WHERE queue = ${queue} AND status = ${from}
    RETURNING queue`);
  return updated.length > 0;
}

/**
 * Claims the alerts due for delivery at `now`: each is held (not due again) until `holdUntil`, so a second
 * evaluator running meanwhile does not send it too. One statement.
 *
 * @example
 * const due = await claimAlerts(db, now, now + 20_000);
 */
export async function claimAlerts(
  db: Db,
  now: number,
  holdUntil: number,
): Promise<Array<{ alert: PendingAlert; attempts: number }>> {
  const rows = await db.all<{ alert_pending: string; alert_attempts: number }>(sql`UPDATE queue_health
    SET alert_next_at = ${holdUntil}, alert_attempts = alert_attempts + 1, updated_at = ${now}
    WHERE alert_pending IS NOT NULL AND coalesce(alert_next_at, 0) <= ${now}
    RETURNING alert_pending, alert_attempts`);
  return rows.map((r) => ({ alert: JSON.parse(r.alert_pending) as PendingAlert, attempts: r.alert_attempts }));
}

/**
 * Records one delivery attempt of alert `alert.id` — unless a newer alert replaced it meanwhile (the fence).
 * Delivered: the alert is done. Failed: retried at `retryAt`, or dropped when `retryAt` is null; either way
 * the error is kept for the health response.
 *
 * @example
 * await finishAlert(db, alert, { delivered: false, error: "HTTP 503", retryAt: now + 30_000 }, now);
 */
export async function finishAlert(
  db: Db,
  alert: PendingAlert,
  outcome: { delivered: true } | { delivered: false; error: string; retryAt: number | null },
  now: number,
): Promise<void> {
  const fence = sql`queue = ${alert.queue} AND json_extract(alert_pending, '$.id') = ${alert.id}`;
  if (outcome.delivered) {
    await db.run(sql`UPDATE queue_health SET alert_pending = NULL, alert_next_at = NULL, alert_attempts = 0,
        last_alert_at = ${now}, last_alert_status = ${alert.status}, last_alert_error = NULL, updated_at = ${now}
      WHERE ${fence}`);
    return;
  }
  const drop = outcome.retryAt === null;
  await db.run(sql`UPDATE queue_health SET
      alert_pending = CASE WHEN ${drop ? 1 : 0} THEN NULL ELSE alert_pending END,
      alert_next_at = ${outcome.retryAt},
      last_alert_error = ${outcome.error}, updated_at = ${now}
    WHERE ${fence}`);
}
