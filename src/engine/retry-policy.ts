import { sql, type SQL } from "drizzle-orm";
import { BACKOFF_JITTER } from "../contracts/limits";
import { DEFAULT_QUEUE_CONFIG } from "./queue-config";

/**
 * What happens to a processing task that failed or whose lease expired — shared by `failTasks` and
 * `reapExpiredLeases` so both follow one policy:
 * - a cancel was requested -> cancelled;
 * - the failure is permanent, or attempts are exhausted -> dead;
 * - otherwise -> pending again, after `retry_after` if given, else capped exponential backoff:
 *   delay = min(cap, base * 2^(attempts-1)) * jitter, jitter uniform in [1 - BACKOFF_JITTER, 1].
 *
 * These are SQL fragments evaluated against the row being updated (SQLite evaluates every SET
 * expression against the old row, so they may be combined freely in one UPDATE).
 */

/** Largest exponent used: 2^30 times any sane base already exceeds every cap. Keeps the product in range. */
const MAX_BACKOFF_EXPONENT = 30;
const JITTER_PER_MILLE = Math.round(BACKOFF_JITTER * 1000);

/** A per-queue config column with its default, read from `queues` for the row's queue. */
function queueSetting(column: "backoff_base_s" | "backoff_cap_s", fallback: number): SQL {
  return sql.raw(`coalesce((SELECT q.${column} FROM queues q WHERE q.name = tasks.queue), ${fallback})`);
}

/** Retry delay in ms for the row's current `attempts`, per its queue's backoff config, with jitter. */
export function backoffDelayMsSql(): SQL {
  const base = queueSetting("backoff_base_s", DEFAULT_QUEUE_CONFIG.backoff_base_s);
  const cap = queueSetting("backoff_cap_s", DEFAULT_QUEUE_CONFIG.backoff_cap_s);
  // random() & 0x7fffffff: a non-negative integer (abs(random()) can overflow on the minimum int64).
  return sql`(min(${cap} * 1000, ${base} * 1000 * (1 << min(max(tasks.attempts - 1, 0), ${sql.raw(String(MAX_BACKOFF_EXPONENT))})))
    * (${sql.raw(String(1000 - JITTER_PER_MILLE))} + (random() & 2147483647) % ${sql.raw(String(JITTER_PER_MILLE + 1))}) / 1000)`;
}

/**
 * The backoff after an expired lease, in ms, without jitter: `min(cap, base * 2^(attempts-1))`. Expiry is
 * detected by two paths (a lease taking the task over, the cron reaper), so the delay must be the same
 * for both — a deterministic value they compute alike. A crashed worker's batch coming back at one instant
 * is no herd to spread: a single lease takes it.
 */
export function expiryBackoffMsSql(): SQL {
  const base = queueSetting("backoff_base_s", DEFAULT_QUEUE_CONFIG.backoff_base_s);
  const cap = queueSetting("backoff_cap_s", DEFAULT_QUEUE_CONFIG.backoff_cap_s);
  return sql`min(${cap} * 1000, ${base} * 1000 * (1 << min(max(tasks.attempts - 1, 0), ${sql.raw(String(MAX_BACKOFF_EXPONENT))})))`;
}

/** The bounds `backoffDelayMsSql` stays within, for tests and docs. */
export function backoffBoundsMs(attempt: number, baseS: number, capS: number): { min: number; max: number } {
  const exponent = Math.min(Math.max(attempt - 1, 0), MAX_BACKOFF_EXPONENT);
  const max = Math.min(capS * 1000, baseS * 1000 * 2 ** exponent);
  return { min: Math.floor((max * (1000 - JITTER_PER_MILLE)) / 1000), max };
}

/** The state a failed or expired processing task moves to. `permanent` is SQL true for a non-retryable failure. */
export function nextStateSql(permanent: SQL): SQL {
  return sql`CASE WHEN tasks.cancel_requested = 1 THEN 'cancelled'
    WHEN (${permanent}) OR tasks.attempts >= tasks.max_attempts THEN 'dead'
    ELSE 'pending' END`;
}

/** True when the task goes back to pending (same conditions as `nextStateSql`). */
export function retriesSql(permanent: SQL): SQL {
  return sql`(tasks.cancel_requested = 0 AND NOT (${permanent}) AND tasks.attempts < tasks.max_attempts)`;
}

/**
 * The SET clause shared by fail and reap: state, run_at, finished_at, the appended error, the lease cleared.
 * `from` is when the backoff starts; `retryAfterMs` (nullable SQL) overrides the backoff.
 */
export function failureSetSql(opts: {
  permanent: SQL;
  from: SQL;
  retryAfterMs: SQL;
  message: SQL;
  kind: SQL;
  at: SQL;
  now: number;
}): SQL {
  const retries = retriesSql(opts.permanent);
  return sql`state = ${nextStateSql(opts.permanent)},
    run_at = CASE WHEN ${retries} THEN ${opts.from} + coalesce(${opts.retryAfterMs}, ${backoffDelayMsSql()}) ELSE tasks.run_at END,
    finished_at = CASE WHEN ${retries} THEN NULL ELSE ${opts.now} END,
    errors = json_insert(tasks.errors, '$[#]', json_object('attempt', tasks.attempts, 'at', CAST(${opts.at} AS INTEGER), 'message', ${opts.message}, 'kind', ${opts.kind})),
    lease_token = NULL,
    lease_expires_at = NULL,
    claim_by = NULL,
    updated_at = ${opts.now}`;
}
