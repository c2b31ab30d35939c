import { sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { QUEUE_ROW_KEY } from "./flow-lease";
import { OTHER_KEYS, type FlowFigures, type KeyFigures } from "../contracts/flow-figures";

export type { FlowFigures, KeyFigures } from "../contracts/flow-figures";

/**
 * Every queue's `top` busiest keys (most due, then running) with their due and running tasks, and per queue
 * one `OTHER_KEYS` row summing the others: /metrics's bounded-cardinality key series. One grouped walk of
 * the keyed live tasks (the `tasks_keyed` index: keyed work only, never finished or unkeyed tasks), plus the
 * queue row of each queue with a flow config (a probe of flow_keys each) for the queues paused whole.
 *
 * @example
 * const { keys, pausedQueues } = await flowFigures(db, Date.now(), 20);
 */
export async function flowFigures(db: Db, now: number, top: number): Promise<FlowFigures> {
  const keys = await db.all<KeyFigures>(sql`WITH k AS (SELECT queue, flow_key AS key,
        sum(state = 'pending' AND run_at <= ${now}) AS due, sum(state = 'processing') AS running
      FROM tasks INDEXED BY tasks_keyed WHERE flow_key IS NOT NULL AND finished_at IS NULL GROUP BY queue, flow_key),
    r AS (SELECT *, row_number() OVER (PARTITION BY queue ORDER BY due DESC, running DESC, key) AS rn FROM k)
    SELECT queue, key, due, running FROM r WHERE rn <= ${top}
    UNION ALL
    SELECT queue, ${OTHER_KEYS}, sum(due), sum(running) FROM r WHERE rn > ${top} GROUP BY queue`);
  // A queue paused whole has a flow config (setFlowPaused writes both in one batch): its queue row's key is
  // probed from `queues`. By `key` alone flow_keys has no index: SQLite read every key of every queue
  // (test/engine/d1/flow-figures-reads.test.ts).
  const paused = await db.all<{ queue: string }>(
    sql`SELECT q.name AS queue FROM queues q CROSS JOIN flow_keys f ON f.queue = q.name AND f.key = ${QUEUE_ROW_KEY}
      WHERE q.flow IS NOT NULL AND f.paused = 1`,
  );
  return { keys, pausedQueues: paused.map((p) => p.queue) };
}
