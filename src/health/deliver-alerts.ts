import type { Db } from "../db/client";
import { ALERT_BACKOFF_BASE_S, ALERT_BACKOFF_CAP_S, ALERT_MAX_ATTEMPTS, ALERT_TIMEOUT_S } from "../contracts/limits";
import { toIso } from "../contracts/time";
import { SIGNATURE_HEADER, signWebhook } from "../processors/webhook-signature";
import { claimAlerts, finishAlert, type PendingAlert } from "./health-store";

/** The header naming an alert: the same on every retry of it, so a receiver can drop repeats. */
export const ALERT_ID_HEADER = "Edgeq-Alert-Id";

/** The JSON body of an alert POST. */
export function alertBody(alert: PendingAlert): string {
  return JSON.stringify({
    type: "edgeq.queue_health",
    id: alert.id,
    queue: alert.queue,
    status: alert.status,
    previous: alert.previous,
    at: toIso(alert.at),
    reasons: alert.reasons,
    figures: alert.figures,
  });
}

/** When a failed attempt `attempts` (1 = the first) is retried, or null when it was the last. */
function retryAt(attempts: number, now: number): number | null {
  if (attempts >= ALERT_MAX_ATTEMPTS) return null;
  return now + Math.min(ALERT_BACKOFF_CAP_S, ALERT_BACKOFF_BASE_S * 2 ** (attempts - 1)) * 1000;
}

/** POSTs one alert, signed; throws a readable error when it was not accepted (2xx). */
async function post(alert: PendingAlert, secret: string, now: number, fetcher: typeof fetch): Promise<void> {
  const body = alertBody(alert);
  const response = await fetcher(alert.url, {
    method: "POST",
    headers: {
      "Content-Type": "application/json",
      [SIGNATURE_HEADER]: await signWebhook(secret, body, Math.floor(now / 1000)),
      [ALERT_ID_HEADER]: alert.id,
    },
    body,
    redirect: "manual",
    signal: AbortSignal.timeout(ALERT_TIMEOUT_S * 1000),
  });
  await response.body?.cancel();
  if (response.status < 200 || response.status > 299) throw new Error(`the receiver answered HTTP ${response.status}`);
}

/**
 * Delivers every alert due at `now`, side by side, each signed like the http processor's webhooks
 * (src/processors/webhook-signature.ts, keyed with WEBHOOK_SECRET) and limited to ALERT_TIMEOUT_S. A failure
 * is retried with backoff by later calls (the cron tick) up to ALERT_MAX_ATTEMPTS; its error is kept for the
 * health response. Never throws for a receiver's fault, so a receiver that is down never holds up the tick
 * for more than ALERT_TIMEOUT_S, and never touches the queue's tasks.
 *
 * @example
 * const { delivered, failed } = await deliverAlerts(db, env.WEBHOOK_SECRET, Date.now());
 */
export async function deliverAlerts(
  db: Db,
  secret: string | undefined,
  now: number,
  fetcher: typeof fetch = fetch,
): Promise<{ delivered: string[]; failed: string[] }> {
  const due = await claimAlerts(db, now, now + 2 * ALERT_TIMEOUT_S * 1000);
  const results = await Promise.all(
    due.map(async ({ alert, attempts }) => {
      try {
        if (!secret) throw new Error("WEBHOOK_SECRET is not set: alerts are signed with it and are not sent unsigned");
        await post(alert, secret, now, fetcher);
        await finishAlert(db, alert, { delivered: true }, now);
        return { queue: alert.queue, ok: true };
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        await finishAlert(db, alert, { delivered: false, error: message, retryAt: retryAt(attempts, now) }, now);
        return { queue: alert.queue, ok: false };
      }
    }),
  );
  return {
    delivered: results.filter((r) => r.ok).map((r) => r.queue),
    failed: results.filter((r) => !r.ok).map((r) => r.queue),
  };
}
