import { sql, type SQL } from "drizzle-orm";
import { batchAll, type Db } from "../db/client";
import { QUEUE_ROW_KEY } from "./flow-lease";

/** Most keys of one queue health looks at per evaluation: a seek, a count of its running tasks and one read
 * of its next task each (~1 ms of D1 per 200 here), so a tick's health pass stays a few ms per flow queue
 * however many keys it has. Keys past them are looked at by later ticks: each tick moves the queue's window
 * on (advanceStarvedKeys), so every key is looked at once per ⌈keys / 200⌉ ticks. */
export const STARVED_KEYS_SCAN = 200;

/** A queue's most starved key: it has due tasks and room to start them, and nothing of it is running. */
export interface StarvedKey {
  queue: string;
  key: string;
  /** When its next task (in lease order) became due (ms). */
  dueSince: number;
}

/** Where a queue's window stands, in `sweep_cursors` (name `flow_starved:<queue>`), as JSON: `after`, the key
 * the next window starts after ('' : the first key); `key`, the most starved key found so far (or null),
 * looked at again by every evaluation until it is starved no more or a more starved one is found. */
const CURSOR_PREFIX = "flow_starved:";

/**
 * For each flow-controlled queue not paused (or only `queue`), its most starved key among its window of
 * STARVED_KEYS_SCAN keys (from the queue's cursor) and the most starved key an earlier tick found: one with
 * due tasks, none running and no retry awaiting its time (so not at a concurrency limit, and not held by an
 * ordered task), not paused, with a whole token when rate-limited — nothing stops a lease from starting its
 * next task, yet none started. Its figure is how long that next task has been due. A key whose tasks are
 * being worked has a running task and is never starved here, however deep its backlog. Read-only (GET health);
 * the cron tick's evaluation moves the windows on (advanceStarvedKeys). Bounded: per queue, STARVED_KEYS_SCAN
 * + 1 seeks in `tasks_keyed` and the keys' started tasks.
 *
 * @example
 * const starved = await starvedKeys(db, Date.now()); // [{ queue: "llm", key: "acme", dueSince: 1_700_000_000_000 }]
 */
export async function starvedKeys(db: Db, now: number, queue?: string): Promise<StarvedKey[]> {
  return db.all<StarvedKey>(sql`${starvedCtes(now, queue)} SELECT queue, key, head AS dueSince FROM best`);
}

/**
 * The cron tick's starvedKeys: the same answer, and each queue's window moves on — to after its last key, or
 * back to the first key once it reached the end — with the most starved key remembered for the next
 * evaluations. One batch: the cursors are written (a queue's row only when it changed: a queue with at most
 * STARVED_KEYS_SCAN keys and no change in its most starved key writes nothing), then read back as the answer.
 * Idempotent enough for overlapping ticks: two that race move a window on once or twice, and either way every
 * key is looked at in its turn.
 *
 * @example
 * const starved = await advanceStarvedKeys(db, Date.now());
 */
export async function advanceStarvedKeys(db: Db, now: number): Promise<StarvedKey[]> {
  const [, rows = []] = await batchAll<{ queue: string; position: string }>(db, [
    sql`${starvedCtes(now)}
      INSERT INTO sweep_cursors (name, position)
      SELECT ${CURSOR_PREFIX} || fq.queue, json_object(
          'after', CASE WHEN (SELECT count(*) FROM w WHERE w.queue = fq.queue AND w.k IS NOT NULL) < ${STARVED_KEYS_SCAN}
            THEN '' ELSE (SELECT max(w.k) FROM w WHERE w.queue = fq.queue) END,
          'key', b.key, 'due', b.head)
        FROM fq LEFT JOIN best b ON b.queue = fq.queue WHERE true
      ON CONFLICT (name) DO UPDATE SET position = excluded.position WHERE sweep_cursors.position IS NOT excluded.position`,
    sql`SELECT q.name AS queue, c.position FROM queues q JOIN sweep_cursors c ON c.name = ${CURSOR_PREFIX} || q.name
      WHERE q.flow IS NOT NULL AND NOT EXISTS (${queuePausedSql(sql`q.name`)})`,
  ]);
  return rows.flatMap((r) => {
    const p = JSON.parse(r.position) as { key: string | null; due: number | null };
    return p.key === null || p.due === null ? [] : [{ queue: r.queue, key: p.key, dueSince: p.due }];
  });
}

function queuePausedSql(queue: SQL): SQL {
  return sql`SELECT 1 FROM flow_keys WHERE queue = ${queue} AND key = ${QUEUE_ROW_KEY} AND paused = 1`;
}

/** The CTEs of both: `fq` (the flow queues and their cursors), `w` (each one's window), `best` (its most
 * starved key among the window and the remembered one: queue, key, head). */
function starvedCtes(now: number, queue?: string): SQL {
  const only = queue === undefined ? sql`` : sql` AND name = ${queue}`;
  const next = (q: string, after: string) =>
    `(SELECT min(flow_key) FROM tasks INDEXED BY tasks_keyed WHERE queue = ${q} AND flow_key > ${after}
      AND flow_key IS NOT NULL AND finished_at IS NULL)`;
  const keyRange = sql`t.queue = w.queue AND t.flow_key = w.k AND t.flow_key IS NOT NULL AND t.finished_at IS NULL`;
  return sql`WITH RECURSIVE
    fq AS (SELECT name AS queue, flow AS f,
        coalesce((SELECT position FROM sweep_cursors WHERE name = ${CURSOR_PREFIX} || queues.name), '{}') AS pos
      FROM queues WHERE flow IS NOT NULL${only} AND NOT EXISTS (${queuePausedSql(sql`queues.name`)})),
    w(queue, k, n) AS (
      SELECT queue, ${sql.raw(next("fq.queue", "coalesce(fq.pos ->> '$.after', '')"))}, 1 FROM fq
      UNION ALL
      SELECT w.queue, ${sql.raw(next("w.queue", "w.k"))}, w.n + 1 FROM w
      WHERE w.k IS NOT NULL AND w.n < ${STARVED_KEYS_SCAN}),
    cands(queue, k) AS (SELECT queue, k FROM w WHERE k IS NOT NULL
      UNION SELECT queue, pos ->> '$.key' FROM fq WHERE pos ->> '$.key' IS NOT NULL),
    ks AS (SELECT w.queue, w.k AS key,
        (SELECT t.run_at FROM tasks t INDEXED BY tasks_keyed WHERE ${keyRange} AND t.started_at IS NULL
          AND t.state = 'pending' AND t.run_at <= ${now} ORDER BY t.priority DESC, t.run_at, t.id LIMIT 1) AS head,
        EXISTS (SELECT 1 FROM tasks t INDEXED BY tasks_keyed WHERE ${keyRange} AND t.started_at IS NOT NULL
          AND (t.state = 'processing' OR t.run_at > ${now})) AS busy,
        coalesce(fk.paused, 0) AS paused, fk.tokens, fk.refilled_at,
        (SELECT CASE WHEN json_type(ov, '$.rate') IS NOT NULL THEN ov -> '$.rate' ELSE fq.f -> '$.default.rate' END
          FROM (SELECT (SELECT value FROM json_each(fq.f, '$.keys') WHERE key = w.k) AS ov)) AS r
      FROM cands w JOIN fq ON fq.queue = w.queue LEFT JOIN flow_keys fk ON fk.queue = w.queue AND fk.key = w.k),
    starved AS (SELECT queue, key, head,
        row_number() OVER (PARTITION BY queue ORDER BY head, key) AS rn
      FROM ks WHERE head IS NOT NULL AND NOT busy AND paused = 0
        AND (r IS NULL OR r ->> '$.count' IS NULL OR tokens IS NULL
          OR tokens + (${now} - coalesce(refilled_at, ${now})) * (r ->> '$.count')
            / (CASE r ->> '$.per' WHEN 'minute' THEN 60000.0 ELSE 1000.0 END) >= 1)),
    best AS (SELECT queue, key, head FROM starved WHERE rn = 1)`;
}
