import { sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { applyFencedUpdate, leaseFenceSql, type AckOutcome, type FencedItem } from "./ack";

export interface CompleteItem extends FencedItem {
  /** Any JSON value; stored as the task's result. */
  result?: unknown;
}

/**
 * Completes up to MAX_BATCH processing tasks in one fenced statement. Each item succeeds or fails on its
 * own: a wrong, stale or expired token is `lease_lost` and changes nothing for that task. A task whose
 * cancel was requested ends `cancelled` instead (its result discarded) and reports `task_cancelled`.
 *
 * @example
 * const [outcome] = await completeTasks(db, [{ id, leaseToken, result: { ok: true } }], Date.now());
 */
export async function completeTasks(db: Db, items: CompleteItem[], now: number): Promise<AckOutcome[]> {
  return applyFencedUpdate(
    db,
    items.map((i) => ({ id: i.id, leaseToken: i.leaseToken, result: i.result ?? null })),
    (json) => sql`UPDATE tasks SET
        state = CASE WHEN tasks.cancel_requested = 1 THEN 'cancelled' ELSE 'completed' END,
        result = CASE WHEN tasks.cancel_requested = 1 THEN NULL ELSE j.value->'result' END,
        progress = CASE WHEN tasks.cancel_requested = 1 THEN tasks.progress ELSE 100 END,
        finished_at = ${now},
        lease_token = NULL,
        lease_expires_at = NULL,
        updated_at = ${now}
      FROM json_each(${json}) AS j
      WHERE ${leaseFenceSql(sql`j.value->>'id'`, sql`j.value->>'lease_token'`, now)}
      RETURNING tasks.id, tasks.queue, tasks.state, tasks.run_at`,
  );
}
