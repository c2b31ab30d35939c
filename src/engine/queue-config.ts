import { eq, sql } from "drizzle-orm";
import { queues } from "../db/schema";
import type { Db } from "../db/client";

/** A queue's effective configuration (stored values over defaults). */
export interface QueueConfig {
  max_attempts: number;
  visibility_timeout_s: number;
  backoff_base_s: number;
  backoff_cap_s: number;
  retention_s: number;
}

/**
 * Defaults for a queue without a stored config.
 * - 3 attempts: one try and two retries, enough to ride out a transient fault without hammering a
 *   broken dependency (Cloudflare Queues defaults to 3 as well).
 * - 30 s visibility: long enough for a typical API call or short render, short enough that a crashed
 *   worker's task is back within a minute (SQS also defaults to 30 s).
 * - backoff 10 s base, 1 h cap: retries at ~10 s, 20 s, 40 s ... never waiting more than an hour.
 * - 7 days retention of finished tasks: time to inspect and redrive, bounded storage.
 */
export const DEFAULT_QUEUE_CONFIG: QueueConfig = {
  max_attempts: 3,
  visibility_timeout_s: 30,
  backoff_base_s: 10,
  backoff_cap_s: 3600,
  retention_s: 7 * 24 * 3600,
};

/** The effective config of one queue. */
export async function getQueueConfig(db: Db, queue: string): Promise<QueueConfig> {
  const row = await db.select().from(queues).where(eq(queues.name, queue)).get();
  return {
    max_attempts: row?.maxAttempts ?? DEFAULT_QUEUE_CONFIG.max_attempts,
    visibility_timeout_s: row?.visibilityTimeoutS ?? DEFAULT_QUEUE_CONFIG.visibility_timeout_s,
    backoff_base_s: row?.backoffBaseS ?? DEFAULT_QUEUE_CONFIG.backoff_base_s,
    backoff_cap_s: row?.backoffCapS ?? DEFAULT_QUEUE_CONFIG.backoff_cap_s,
    retention_s: row?.retentionS ?? DEFAULT_QUEUE_CONFIG.retention_s,
  };
}

/** Stores the given fields of a queue's config (others keep their stored or default values). */
export async function putQueueConfig(
  db: Db,
  queue: string,
  patch: Partial<QueueConfig>,
  now: number,
): Promise<QueueConfig> {
  const values = {
    maxAttempts: patch.max_attempts,
    visibilityTimeoutS: patch.visibility_timeout_s,
    backoffBaseS: patch.backoff_base_s,
    backoffCapS: patch.backoff_cap_s,
    retentionS: patch.retention_s,
  };
  await db
    .insert(queues)
    .values({ name: queue, ...values, updatedAt: now })
    .onConflictDoUpdate({
      target: queues.name,
      set: {
        maxAttempts: sql`coalesce(excluded.max_attempts, ${queues.maxAttempts})`,
        visibilityTimeoutS: sql`coalesce(excluded.visibility_timeout_s, ${queues.visibilityTimeoutS})`,
        backoffBaseS: sql`coalesce(excluded.backoff_base_s, ${queues.backoffBaseS})`,
        backoffCapS: sql`coalesce(excluded.backoff_cap_s, ${queues.backoffCapS})`,
        retentionS: sql`coalesce(excluded.retention_s, ${queues.retentionS})`,
        updatedAt: now,
      },
    });
  return getQueueConfig(db, queue);
}
