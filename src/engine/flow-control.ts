import { sql, type SQL } from "drizzle-orm";
import { batchAll, type Db } from "../db/client";
import { QUEUE_ROW_KEY } from "./flow-lease";

/**
 * Flow control's writes and reads besides the lease (src/engine/flow-lease.ts): pausing and resuming a queue
 * or one key, and what each key of a queue holds (for stats, the dashboard, metrics and health).
 */

/** A key of a flow-controlled queue, as its tasks and its state show it now. */
export interface FlowKeyState {
  key: string;
  /** Pending tasks due now (waiting for a slot, a token or a lease). */
  due: number;
  /** Tasks processing under a live lease: the slots the key holds. */
  running: number;
  paused: boolean;
  /** The key's concurrency limit from the queue's config (its override, else the default); null: none. */
  concurrency: number | null;
  /** Running at its concurrency limit (or, ordered, one running). */
  atLimit: boolean;
  /** Whole tokens in the key's rate bucket now; null: no rate limit. */
  tokens: number | null;
}

/** A queue's flow state: its pause, and its keys. */
export interface QueueFlowState {
  paused: boolean;
  /** The keys with live tasks or a paused state, most due first, at most `limit`. */
  keys: FlowKeyState[];
}

/**
 * Pauses (or resumes) a queue (`key` null) or one key of it: while paused nothing of it is handed out by
 * any lease; enqueues are accepted and running tasks finish. One batch: the pause and the queue's flow
 * config (a paused queue or key needs flow control's lease: a queue without a config gets `{}`; resuming
 * the last pause of a queue whose config is `{}` clears it back to none, and its leases are today's again).
 * Applies to every lease made after it, on every isolate (the state is in the queue's database).
 *
 * @example
 * await setFlowPaused(db, "emails", "acme", true, Date.now());
 */
export async function setFlowPaused(
  db: Db,
  queue: string,
  key: string | null,
  paused: boolean,
  now: number,
): Promise<void> {
  const rowKey = key ?? QUEUE_ROW_KEY;
  await batchAll(db, [
    sql`INSERT INTO flow_keys (queue, key, paused, updated_at) VALUES (${queue}, ${rowKey}, ${paused ? 1 : 0}, ${now})
      ON CONFLICT (queue, key) DO UPDATE SET paused = excluded.paused, updated_at = excluded.updated_at`,
    paused
      ? sql`INSERT INTO queues (name, flow, updated_at) VALUES (${queue}, '{}', ${now})
          ON CONFLICT (name) DO UPDATE SET flow = coalesce(queues.flow, '{}')`
      : sql`UPDATE queues SET flow = NULL WHERE name = ${queue} AND flow = '{}'
          AND NOT EXISTS (SELECT 1 FROM flow_keys WHERE queue = ${queue} AND paused = 1)`,
  ]);
}

/** Most keys one read of a queue's flow state answers: a page of the dashboard's table, and bounded work. */
export const MAX_FLOW_KEYS_READ = 100;

/**
 * A queue's flow state: whether it is paused, and up to `limit` of its keys — those with live tasks, most
 * due first (then most running), and the paused ones — each with its due and running counts from the tasks,
 * its pause, its concurrency limit and whether it is at it, and its tokens now. Reads every live keyed task
 * of the queue once (a grouped walk of the `tasks_keyed` index), so it is for stats pages, not for leases.
 *
 * @example
 * const { paused, keys } = await readQueueFlow(db, "emails", 20, Date.now());
 */
export async function readQueueFlow(db: Db, queue: string, limit: number, now: number): Promise<QueueFlowState> {
  const n = Math.min(Math.max(1, limit), MAX_FLOW_KEYS_READ);
  const rows = await db.all<{
    key: string;
    due: number;
    running: number;
    paused: number;
    concurrency: number | null;
    ordered: number | null;
    tokens: number | null;
  }>(sql`WITH cfg AS (SELECT flow AS f FROM queues WHERE name = ${queue}),
    live AS (SELECT flow_key AS key,
        sum(state = 'pending' AND run_at <= ${now}) AS due,
        sum(state = 'processing' AND lease_expires_at > ${now} AND NOT (claim_by IS NOT NULL AND claim_by <= ${now})) AS running
      FROM tasks WHERE queue = ${queue} AND flow_key IS NOT NULL AND finished_at IS NULL GROUP BY flow_key),
    ks AS (SELECT key FROM live UNION SELECT key FROM flow_keys WHERE queue = ${queue} AND key <> '' AND paused = 1),
    o AS (SELECT ks.key, coalesce(l.due, 0) AS due, coalesce(l.running, 0) AS running,
        coalesce(fk.paused, 0) AS paused, fk.tokens, fk.refilled_at,
        (SELECT value FROM json_each((SELECT f FROM cfg), '$.keys') WHERE key = ks.key) AS ov,
        (SELECT f -> '$.default' FROM cfg) AS def
      FROM ks LEFT JOIN live l ON l.key = ks.key LEFT JOIN flow_keys fk ON fk.queue = ${queue} AND fk.key = ks.key)
    SELECT key, due, running, paused,
      CASE WHEN json_type(ov, '$.concurrency') IS NOT NULL THEN ov ->> '$.concurrency' ELSE def ->> '$.concurrency' END AS concurrency,
      CASE WHEN json_type(ov, '$.ordered') IS NOT NULL THEN ov ->> '$.ordered' ELSE def ->> '$.ordered' END AS ordered,
      (SELECT CAST(min(coalesce(r ->> '$.burst', r ->> '$.count'),
          coalesce(o.tokens, coalesce(r ->> '$.burst', r ->> '$.count'))
          + (${now} - coalesce(o.refilled_at, ${now})) * (r ->> '$.count')
            / (CASE r ->> '$.per' WHEN 'minute' THEN 60000.0 ELSE 1000.0 END)) AS INTEGER)
        FROM (SELECT CASE WHEN json_type(ov, '$.rate') IS NOT NULL THEN ov -> '$.rate' ELSE def -> '$.rate' END AS r)
        WHERE r ->> '$.count' IS NOT NULL) AS tokens
    FROM o ORDER BY due DESC, running DESC, key LIMIT ${n}`);
  const queuePaused = await db.get<{ paused: number }>(
    sql`SELECT paused FROM flow_keys WHERE queue = ${queue} AND key = ${QUEUE_ROW_KEY}`,
  );
  return {
    paused: queuePaused?.paused === 1,
    keys: rows.map((r) => ({
      key: r.key,
      due: r.due,
      running: r.running,
      paused: r.paused === 1,
      concurrency: r.concurrency,
      atLimit: (r.concurrency !== null && r.running >= r.concurrency) || (r.ordered === 1 && r.running >= 1),
      tokens: r.tokens,
    })),
  };
}

/**
 * For a holder write's RETURNING (complete, fail, release): whether the task it ended or handed back held a
 * flow slot another task may be waiting for — a keyed task of a queue whose config limits concurrency or
 * orders keys (the default's or any named key's) — as `flow_slot`. The effects owner then wakes the queue's
 * coordinator (its long polls and push dispatch) at once, instead of at the poll's end. Reads the queue's row
 * only for keyed tasks: an unkeyed task's ack reads and writes what it did.
 */
export function flowSlotReturningSql(queue: SQL = sql`tasks.queue`): SQL {
  const limited = sql`coalesce(f ->> '$.default.concurrency', 0) > 0 OR coalesce(f ->> '$.default.ordered', 0) = 1
    OR EXISTS (SELECT 1 FROM json_each(f, '$.keys') k
      WHERE coalesce(k.value ->> '$.concurrency', 0) > 0 OR coalesce(k.value ->> '$.ordered', 0) = 1)`;
  return sql`CASE WHEN tasks.flow_key IS NULL THEN 0 ELSE coalesce((SELECT ${limited}
    FROM (SELECT flow AS f FROM queues WHERE name = ${queue} AND flow IS NOT NULL)), 0) END AS flow_slot`;
}

/**
 * The times at which a rate-limited key of `queue` with due tasks (or the queue itself, under its own rate)
 * gets its next whole token, as a SELECT of `at` for nextRunAt's union: a lease that came back short for
 * want of tokens is answered then — the coordinator's alarm fires at it while polls wait or push dispatch
 * runs. Only buckets a lease has spent below one token are looked at (their flow_keys rows); a queue
 * without a flow config reads its queue row and nothing else. Rounded up: at that millisecond the token is
 * whole.
 */
export function flowTokenTimesSql(queue: string, now: number): SQL {
  return sql`SELECT CAST(t AS INTEGER) + (t > CAST(t AS INTEGER)) AS at FROM (
      SELECT refilled_at + (1 - tokens) * (CASE r ->> '$.per' WHEN 'minute' THEN 60000.0 ELSE 1000.0 END)
        / (r ->> '$.count') AS t
      FROM (SELECT fk.key, fk.tokens, fk.refilled_at,
          CASE WHEN fk.key = ${QUEUE_ROW_KEY} THEN q.flow -> '$.rate'
            ELSE (SELECT CASE WHEN json_type(ov, '$.rate') IS NOT NULL THEN ov -> '$.rate' ELSE q.flow -> '$.default.rate' END
              FROM (SELECT (SELECT value FROM json_each(q.flow, '$.keys') WHERE key = fk.key) AS ov)) END AS r
        FROM queues q JOIN flow_keys fk ON fk.queue = q.name
        WHERE q.name = ${queue} AND q.flow IS NOT NULL AND fk.tokens < 1 AND fk.paused = 0
          AND CASE WHEN fk.key = ${QUEUE_ROW_KEY}
            THEN EXISTS (SELECT 1 FROM tasks WHERE tasks.queue = ${queue} AND tasks.finished_at IS NULL
              AND tasks.state = 'pending' AND tasks.run_at <= ${now})
            ELSE EXISTS (SELECT 1 FROM tasks INDEXED BY tasks_keyed WHERE tasks.queue = ${queue}
              AND tasks.flow_key = fk.key AND tasks.flow_key IS NOT NULL AND tasks.finished_at IS NULL
              AND tasks.state = 'pending' AND tasks.run_at <= ${now}) END)
      WHERE r ->> '$.count' > 0)`;
}
