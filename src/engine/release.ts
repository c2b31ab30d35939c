import { sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { ackedWithSql, applyFencedUpdate, leaseFenceSql, type AckOutcome, type AckScope, type FencedItem } from "./ack";
import { flowSlotReturningSql } from "./flow-control";

/**
 * Hands leased tasks back unfinished: pending again at once, the attempt not counted (a worker shutting
 * down did not try and fail, it just stopped). Fenced like every holder write; a task whose cancel was
 * requested ends cancelled instead (`task_cancelled`).
 *
 * @example
 * await releaseTasks(db, [{ id, leaseToken }], Date.now());
 */
export async function releaseTasks(
  db: Db,
  items: FencedItem[],
  now: number,
  scope: AckScope = {},
): Promise<AckOutcome[]> {
  return applyFencedUpdate(
    db,
    items.map((i) => ({ id: i.id, leaseToken: i.leaseToken })),
    (json) => ({
      update: sql`UPDATE tasks SET
        state = CASE WHEN tasks.cancel_requested = 1 THEN 'cancelled' ELSE 'pending' END,
        finished_at = CASE WHEN tasks.cancel_requested = 1 THEN ${now} ELSE NULL END,
        attempts = max(tasks.attempts - 1, 0),
        run_at = ${now},
        lease_token = NULL,
        lease_expires_at = NULL,
        claim_by = NULL,
        acked_with = ${ackedWithSql("release", sql`j.value->>'lease_token'`)},
        updated_at = ${now}
      FROM json_each(${json}) AS j
      WHERE ${leaseFenceSql(sql`j.value->>'id'`, sql`j.value->>'lease_token'`, now, scope)}
      RETURNING tasks.id, tasks.queue, tasks.state, tasks.run_at, tasks.type, tasks.started_at, ${flowSlotReturningSql()}`,
      count: { now, attempt: false },
    }),
    scope,
    "release",
  );
}
