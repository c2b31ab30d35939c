import { sql } from "drizzle-orm";
import type { Db } from "../db/client";
import type { FencedItem } from "./ack";

/** A task whose undelivered provisional lease was returned: pending again, due at its own `run_at`. */
export interface ReturnedTask {
  id: string;
  queue: string;
  run_at: number;
}

/**
 * Returns to pending the provisional leases whose answer never left the coordinator — tasks leased for a waiter that
 * was withdrawn while the lease was in flight, so the poll answered with nothing and no client holds the
 * token: each is pending again at once, its attempt refunded (nobody ran it), its lease token cleared. A
 * hand-out whose answer was given may be in a live client's hands: that one is not returned, its claim window
 * is ended (end-claim-windows.ts), and stays its holder's until another lease takes it.
 *
 * Not a holder write, so not `leaseFenceSql`: the fence admits a claimed lease, and a claimed lease is
 * the holder's to keep. The guard is the token the coordinator handed out AND a claim still pending
 * (`claim_by` set and not yet passed): a lease claimed meanwhile (claim_by NULL), or already void and
 * taken over (another token), is left alone — so a claim racing this statement either lands first and
 * keeps the task, or finds the token gone (`lease_lost`); D1 runs one statement at a time. A task whose
 * cancel was requested is left for the reaper to end (cancelled), as an unclaimed lease always is.
 *
 * @example
 * const returned = await returnUndelivered(db, [{ id, leaseToken }], Date.now());
 */
export async function returnUndelivered(db: Db, items: FencedItem[], now: number): Promise<ReturnedTask[]> {
  if (items.length === 0) return [];
  const json = JSON.stringify(items.map((i) => ({ id: i.id, lease_token: i.leaseToken })));
  return db.all<ReturnedTask>(sql`UPDATE tasks SET
      state = 'pending',
      attempts = max(tasks.attempts - 1, 0),
      lease_token = NULL,
      lease_expires_at = NULL,
      claim_by = NULL,
      updated_at = ${now}
    FROM json_each(${json}) AS j
    WHERE tasks.id = j.value->>'id' AND tasks.lease_token = j.value->>'lease_token'
      AND tasks.state = 'processing' AND tasks.cancel_requested = 0
      AND tasks.claim_by IS NOT NULL AND tasks.claim_by > ${now}
    RETURNING tasks.id, tasks.queue, tasks.run_at`);
}
