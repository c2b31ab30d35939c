import { sql } from "drizzle-orm";
import type { Db } from "../db/client";
import type { FencedItem } from "./ack";

/** A hand-out whose claim window was ended now: leasable, still its holder's until another lease takes it. */
export interface EndedHandOut {
  id: string;
  queue: string;
  run_at: number;
  lease_token: string;
}

/**
 * Ends the claim window of provisional leases nobody claimed, now — the coordinator's end of the claim window of a
 * hand-out whose poll was withdrawn after it was answered, or that was left unclaimed while another poll
 * waits (src/coordinator/hand-outs.ts). Nothing else changes: the task stays processing under its holder's
 * token, so the next lease takes it over (attempt refunded, no backoff: src/engine/redelivery.ts), and until
 * one does the holder's own complete, fail, heartbeat, extend or release is accepted (`leaseFenceSql`) — a
 * live client that was only slow to make its first call loses the task to another lease, never to time.
 *
 * At most `limit` of them, the first unclaimed ones in `items`' order: the coordinator takes back only what
 * its waiting polls ask for, so hand-outs beyond that stay untouched with their holders. The guard is the
 * coordinator's token and a claim still pending (`claim_by` set and not yet passed): a lease claimed
 * meanwhile (claim_by NULL), taken over (another token) or finished is left alone; D1 runs one statement at
 * a time, so a claim racing this statement lands before it (and is left alone) or after it (and claims). A
 * task whose cancel was requested is left to its holder's next write or the reaper, as before. One row
 * written per claim window ended, as the return to pending it replaces.
 *
 * @example
 * const lapsed = await endClaimWindows(db, [{ id, leaseToken }], Date.now(), 1);
 */
export async function endClaimWindows(
  db: Db,
  items: FencedItem[],
  now: number,
  limit: number = items.length,
): Promise<EndedHandOut[]> {
  if (items.length === 0 || limit < 1) return [];
  const json = JSON.stringify(items.map((i) => ({ id: i.id, lease_token: i.leaseToken })));
  return db.all<EndedHandOut>(sql`WITH picked AS (
      SELECT tasks.id AS id FROM json_each(${json}) AS j JOIN tasks ON tasks.id = j.value->>'id'
      WHERE tasks.lease_token = j.value->>'lease_token' AND tasks.state = 'processing'
        AND tasks.cancel_requested = 0 AND tasks.claim_by IS NOT NULL AND tasks.claim_by > ${now}
      ORDER BY j.key LIMIT ${limit}
    )
    UPDATE tasks SET claim_by = ${now}, updated_at = ${now}
    WHERE tasks.id IN (SELECT id FROM picked)
    RETURNING tasks.id, tasks.queue, tasks.run_at, tasks.lease_token`);
}
