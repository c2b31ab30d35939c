import { sql } from "drizzle-orm";
import type { Db } from "../db/client";
import {
  applyFencedUpdate,
  keepLeaseSetSql,
  keptLeaseSql,
  leaseFenceSql,
  ownLeaseExpirySql,
  type AckOutcome,
  type AckScope,
  type FencedItem,
} from "./ack";

export interface ExtendItem extends FencedItem {
  /** New lease length from now, in seconds; absent: the lease's own length (as it was leased). */
  visibilityTimeoutS?: number;
}

/**
 * Extends up to MAX_BATCH leases in one fenced statement — and claims them: a provisional lease (handed
 * to a long poll after it waited) is leasable again unless claimed within its claim window, and this is
 * the way to claim a whole batch at once on receipt. Each item succeeds or fails on its own (`lease_lost`, `not_found`); a
 * task whose cancel was requested ends cancelled instead (`task_cancelled`), as with a heartbeat.
 * The outcome's `lease_expires_at` is the new expiry: `now` plus the item's length, else the lease's own.
 *
 * @example
 * const [outcome] = await extendLeases(db, [{ id, leaseToken, visibilityTimeoutS: 60 }], Date.now());
 */
export async function extendLeases(
  db: Db,
  items: ExtendItem[],
  now: number,
  scope: AckScope = {},
): Promise<AckOutcome[]> {
  return applyFencedUpdate(
    db,
    items.map((i) => ({
      id: i.id,
      leaseToken: i.leaseToken,
      expires_at: i.visibilityTimeoutS === undefined ? null : now + i.visibilityTimeoutS * 1000,
    })),
    (json) => {
      const { cancel, keep } = keptLeaseSql(
        {
          from: sql`FROM json_each(${json}) AS j`,
          where: leaseFenceSql(sql`j.value->>'id'`, sql`j.value->>'lease_token'`, now, scope),
          returning: sql`tasks.id, tasks.queue, tasks.state, tasks.run_at, tasks.lease_expires_at, tasks.type, tasks.started_at`,
        },
        keepLeaseSetSql(sql`coalesce(j.value->>'expires_at', ${ownLeaseExpirySql(now)})`, now),
        now,
      );
      return { alsoUpdate: cancel, update: keep, count: { now, attempt: false } };
    },
    scope,
  );
}
