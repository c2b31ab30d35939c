/**
 * The baseline: a jobs table built the usual way, for comparison only (nothing in src/ uses it).
 * - a rowid table (`id INTEGER PRIMARY KEY`, the cheapest rowid variant: no separate primary-key index);
 * - an index on status (with queue first and the dequeue order after it, so a dequeue is an index seek);
 * - a unique partial index for dedupe among live jobs;
 * - one statement per job: enqueue inserts one row per statement, a dequeue takes one job with
 *   `UPDATE ... WHERE id = (SELECT ... LIMIT 1) RETURNING`, acks update one row each. A batch of n runs n
 *   such statements in one D1 batch (one round trip, one transaction).
 */
export const BASELINE_SCHEMA = [
  `CREATE TABLE IF NOT EXISTS jobs (
    id INTEGER PRIMARY KEY,
    queue TEXT NOT NULL,
    type TEXT NOT NULL DEFAULT 'default',
    status TEXT NOT NULL DEFAULT 'pending',
    priority INTEGER NOT NULL DEFAULT 0,
    payload TEXT NOT NULL DEFAULT 'null',
    result TEXT,
    last_error TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,
    max_attempts INTEGER NOT NULL DEFAULT 3,
    run_at INTEGER NOT NULL,
    locked_by TEXT,
    locked_until INTEGER,
    dedupe_key TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    started_at INTEGER,
    finished_at INTEGER
  )`,
  `CREATE INDEX IF NOT EXISTS jobs_status ON jobs (queue, status, priority DESC, run_at)`,
  `CREATE UNIQUE INDEX IF NOT EXISTS jobs_dedupe ON jobs (queue, dedupe_key)
    WHERE dedupe_key IS NOT NULL AND status IN ('pending', 'processing')`,
];

export interface BaselineJob {
  id: number;
  holder: string;
}

export interface BaselineNewJob {
  payload: unknown;
  dedupeKey?: string;
  maxAttempts?: number;
}

/** Inserts each job with its own INSERT statement, all in one batch. A held dedupe key is skipped. */
export async function baselineEnqueue(db: D1Database, queue: string, jobs: BaselineNewJob[], now: number) {
  const insert = db.prepare(
    `INSERT INTO jobs (queue, payload, max_attempts, run_at, dedupe_key, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
  );
  await db.batch(
    jobs.map((j) =>
      insert.bind(queue, JSON.stringify(j.payload ?? null), j.maxAttempts ?? 3, now, j.dedupeKey ?? null, now, now),
    ),
  );
}

/** Dequeues up to `max` jobs, one single-row UPDATE ... RETURNING per job, in one batch. */
export async function baselineDequeue(
  db: D1Database,
  queue: string,
  max: number,
  holder: string,
  visibilityMs: number,
  now: number,
): Promise<BaselineJob[]> {
  const dequeue = db.prepare(
    `UPDATE jobs SET status = 'processing', attempts = attempts + 1, locked_by = ?, locked_until = ?,
       started_at = coalesce(started_at, ?), updated_at = ?
     WHERE id = (SELECT id FROM jobs WHERE queue = ? AND status = 'pending' AND run_at <= ?
                 ORDER BY priority DESC, run_at LIMIT 1)
     RETURNING id, locked_by`,
  );
  const results = await db.batch<{ id: number; locked_by: string }>(
    Array.from({ length: max }, () => dequeue.bind(holder, now + visibilityMs, now, now, queue, now)),
  );
  return results.flatMap((r) => r.results.map((row) => ({ id: row.id, holder: row.locked_by })));
}

/** Completes jobs, one fenced UPDATE per job, in one batch; returns how many changed. */
export async function baselineComplete(db: D1Database, jobs: BaselineJob[], now: number): Promise<number> {
  if (jobs.length === 0) return 0;
  const complete = db.prepare(
    `UPDATE jobs SET status = 'completed', result = 'null', locked_by = NULL, locked_until = NULL,
       finished_at = ?, updated_at = ?
     WHERE id = ? AND status = 'processing' AND locked_by = ?`,
  );
  const results = await db.batch(jobs.map((j) => complete.bind(now, now, j.id, j.holder)));
  return results.reduce((n, r) => n + (r.meta.changes ?? 0), 0);
}

/** Fails jobs: back to pending at `now + retryAfterMs`, or dead when permanent or out of attempts. */
export async function baselineFail(
  db: D1Database,
  jobs: BaselineJob[],
  now: number,
  permanent: boolean,
  retryAfterMs: number,
): Promise<number> {
  if (jobs.length === 0) return 0;
  const fail = db.prepare(
    `UPDATE jobs SET
       status = CASE WHEN ?1 OR attempts >= max_attempts THEN 'dead' ELSE 'pending' END,
       finished_at = CASE WHEN ?1 OR attempts >= max_attempts THEN ?2 ELSE NULL END,
       run_at = ?2 + ?3, last_error = ?4, locked_by = NULL, locked_until = NULL, updated_at = ?2
     WHERE id = ?5 AND status = 'processing' AND locked_by = ?6`,
  );
  const results = await db.batch(
    jobs.map((j) => fail.bind(permanent ? 1 : 0, now, retryAfterMs, "boom", j.id, j.holder)),
  );
  return results.reduce((n, r) => n + (r.meta.changes ?? 0), 0);
}
