import { sql } from "drizzle-orm";
import { batchAll, type Db } from "../db/client";
import { QUEUE_ROW_KEY } from "./flow-lease";

/** A flow_keys row a prune deleted (key '' : the queue's own). */
export interface PrunedFlowKey {
  queue: string;
  key: string;
}

/** The prune's cursor in `sweep_cursors`. */
const FLOW_KEY_PRUNE_CURSOR = "flow_keys";

/** flow_keys rows one prune reads: each costs a seek in `tasks_keyed` (is the key live?) and a look at the
 * queue's config, ~1 ms of D1 per 200 here, so 1,000 keep the tick's step to a few ms; at one call a minute
 * it passes over 1.4 million keys a day. */
export const FLOW_KEY_PRUNE_WINDOW = 1000;

/**
 * Deletes the flow_keys rows nothing needs any more, one window of the primary key (FLOW_KEY_PRUNE_WINDOW rows
 * read) per call, going on from where the last call stopped (`sweep_cursors`; at the end of the table it
 * starts again). A key's row is idle when the key has no live task, is not paused, and its bucket is full
 * (or it has no rate now): the row then says nothing a missing row does not (a lease takes a missing bucket as
 * full), so a lease after the prune hands out exactly what it would have. A queue's own row (key '') goes
 * once the queue has no flow config and is not paused (its cursor only orders a flow lease's keys). The cron
 * tick's step; idempotent, and two overlapping prunes delete each row once. A lease that writes a row again
 * after it was pruned writes it as new (an upsert).
 *
 * @example
 * const { pruned } = await pruneIdleFlowKeys(db, Date.now());
 */
export async function pruneIdleFlowKeys(
  db: Db,
  now: number,
  window: number = FLOW_KEY_PRUNE_WINDOW,
): Promise<{ pruned: number; keys: PrunedFlowKey[] }> {
  const cursor = await db.get<{ position: string }>(
    sql`SELECT position FROM sweep_cursors WHERE name = ${FLOW_KEY_PRUNE_CURSOR}`,
  );
  const [q, k] = cursor?.position ? (JSON.parse(cursor.position) as [string, string]) : ["", ""];
  const end = await db.get<{ queue: string; key: string }>(sql`SELECT queue, key FROM flow_keys
    WHERE (queue, key) > (${q}, ${k}) ORDER BY queue, key LIMIT 1 OFFSET ${Math.trunc(window) - 1}`);
  const upTo = end ? sql`AND (queue, key) <= (${end.queue}, ${end.key})` : sql``;
  const next = end ? JSON.stringify([end.queue, end.key]) : "";
  // The key's rate now: its override's when it names one (null included), else the default's.
  const rate = sql`(SELECT CASE WHEN json_type(ov, '$.rate') IS NOT NULL THEN ov -> '$.rate' ELSE f -> '$.default.rate' END
    FROM (SELECT q.flow AS f, (SELECT value FROM json_each(q.flow, '$.keys') WHERE key = fk.key) AS ov
      FROM queues q WHERE q.name = fk.queue))`;
  const full = sql`(fk.tokens IS NULL OR r IS NULL OR r ->> '$.count' IS NULL
    OR fk.tokens + (${now} - coalesce(fk.refilled_at, ${now})) * (r ->> '$.count')
      / (CASE r ->> '$.per' WHEN 'minute' THEN 60000.0 ELSE 1000.0 END)
      >= coalesce(r ->> '$.burst', r ->> '$.count'))`;
  const [deleted = []] = await batchAll<PrunedFlowKey>(db, [
    sql`DELETE FROM flow_keys WHERE (queue, key) IN (
        SELECT fk.queue, fk.key FROM (SELECT *, ${rate} AS r FROM flow_keys fk
            WHERE (fk.queue, fk.key) > (${q}, ${k}) ${upTo} AND fk.paused = 0) fk
          WHERE CASE WHEN fk.key = ${QUEUE_ROW_KEY}
            THEN NOT EXISTS (SELECT 1 FROM queues WHERE name = fk.queue AND flow IS NOT NULL)
            ELSE NOT EXISTS (SELECT 1 FROM tasks INDEXED BY tasks_keyed WHERE tasks.queue = fk.queue
                AND tasks.flow_key = fk.key AND tasks.flow_key IS NOT NULL AND tasks.finished_at IS NULL)
              AND ${full} END)
      RETURNING queue, key`,
    sql`INSERT INTO sweep_cursors (name, position) VALUES (${FLOW_KEY_PRUNE_CURSOR}, ${next})
      ON CONFLICT (name) DO UPDATE SET position = excluded.position`,
  ]);
  return { pruned: deleted.length, keys: deleted };
}
