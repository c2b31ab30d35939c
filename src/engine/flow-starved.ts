import { sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { QUEUE_ROW_KEY } from "./flow-lease";

/** Most keys of one queue health looks at per evaluation: a seek, a count of its running tasks and one read
 * of its next task each (~1 ms of D1 per 200 here), so a tick's health pass stays a few ms per flow queue
 * however many keys it has. Keys past the first 200 (in key order) are not looked at: stated in
 * docs/flow-control.md. */
export const STARVED_KEYS_SCAN = 200;

/** A queue's most starved key: it has due tasks and room to start them, and nothing of it is running. */
export interface StarvedKey {
  queue: string;
  key: string;
  /** When its next task (in lease order) became due (ms). */
  dueSince: number;
}

/**
 * For each flow-controlled queue not paused (or only `queue`), its most starved key among the first
 * STARVED_KEYS_SCAN keys: one with due tasks, none running and no retry awaiting its time (so not at a
 * concurrency limit, and not held by an ordered task), not paused, with a whole token when rate-limited — nothing stops a lease from starting its
 * next task, yet none started. Its figure is how long that next task has been due. A key whose tasks are
 * being worked has a running task and is never starved here, however deep its backlog. Read-only; bounded:
 * per queue, STARVED_KEYS_SCAN seeks in `tasks_keyed` and the keys' started tasks.
 *
 * @example
 * const starved = await starvedKeys(db, Date.now()); // [{ queue: "llm", key: "acme", dueSince: 1_700_000_000_000 }]
 */
export async function starvedKeys(db: Db, now: number, queue?: string): Promise<StarvedKey[]> {
  const only = queue === undefined ? sql`` : sql` AND name = ${queue}`;
  const next = (q: string, after: string) =>
    `(SELECT min(flow_key) FROM tasks INDEXED BY tasks_keyed WHERE queue = ${q} AND flow_key > ${after}
      AND flow_key IS NOT NULL AND finished_at IS NULL)`;
  const keyRange = sql`t.queue = w.queue AND t.flow_key = w.k AND t.flow_key IS NOT NULL AND t.finished_at IS NULL`;
  return db.all<StarvedKey>(sql`WITH RECURSIVE
    fq AS (SELECT name AS queue, flow AS f FROM queues WHERE flow IS NOT NULL${only}
      AND NOT EXISTS (SELECT 1 FROM flow_keys WHERE queue = queues.name AND key = ${QUEUE_ROW_KEY} AND paused = 1)),
    w(queue, k, n) AS (
      SELECT queue, ${sql.raw(next("fq.queue", "''"))}, 1 FROM fq
      UNION ALL
      SELECT w.queue, ${sql.raw(next("w.queue", "w.k"))}, w.n + 1 FROM w
      WHERE w.k IS NOT NULL AND w.n < ${STARVED_KEYS_SCAN}),
    ks AS (SELECT w.queue, w.k AS key,
        (SELECT t.run_at FROM tasks t INDEXED BY tasks_keyed WHERE ${keyRange} AND t.started_at IS NULL
          AND t.state = 'pending' AND t.run_at <= ${now} ORDER BY t.priority DESC, t.run_at, t.id LIMIT 1) AS head,
        EXISTS (SELECT 1 FROM tasks t INDEXED BY tasks_keyed WHERE ${keyRange} AND t.started_at IS NOT NULL
          AND (t.state = 'processing' OR t.run_at > ${now})) AS busy,
        coalesce(fk.paused, 0) AS paused, fk.tokens, fk.refilled_at,
        (SELECT CASE WHEN json_type(ov, '$.rate') IS NOT NULL THEN ov -> '$.rate' ELSE fq.f -> '$.default.rate' END
          FROM (SELECT (SELECT value FROM json_each(fq.f, '$.keys') WHERE key = w.k) AS ov)) AS r
      FROM w JOIN fq ON fq.queue = w.queue LEFT JOIN flow_keys fk ON fk.queue = w.queue AND fk.key = w.k
      WHERE w.k IS NOT NULL),
    starved AS (SELECT queue, key, head,
        row_number() OVER (PARTITION BY queue ORDER BY head, key) AS rn
      FROM ks WHERE head IS NOT NULL AND NOT busy AND paused = 0
        AND (r IS NULL OR r ->> '$.count' IS NULL OR tokens IS NULL
          OR tokens + (${now} - coalesce(refilled_at, ${now})) * (r ->> '$.count')
            / (CASE r ->> '$.per' WHEN 'minute' THEN 60000.0 ELSE 1000.0 END) >= 1))
    SELECT queue, key, head AS dueSince FROM starved WHERE rn = 1`);
}
