import { sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { SESSION_LEASE_WINDOW } from "../contracts/limits";
import { sessionHolderSuffix } from "../contracts/session";
import type { FencedItem } from "./ack";
import { listLiveSegments } from "./live-front";

/**
 * The leases a worker session holds on a queue (the port's `sessionLeases`): for each (queue, priority) run of
 * the live index, its first SESSION_LEASE_WINDOW due entries in lease order — where the tasks in flight are
 * (a lease takes the first due tasks: live-front.ts) — those processing under the session's holder mark and
 * not expired. One index probe per run, then one bounded statement per run of this queue.
 *
 * @example
 * const held = await readSessionLeases(db, "emails", "k3JzQ9vX2mPq8RtW", Date.now());
 */
export async function readSessionLeases(db: Db, queue: string, session: string, now: number): Promise<FencedItem[]> {
  const suffix = sessionHolderSuffix(session);
  const segments = await listLiveSegments(db, sql`tasks`, queue);
  const held: FencedItem[] = [];
  for (const segment of segments) {
    const rows = await db.all<{ id: string; lease_token: string }>(sql`SELECT id, lease_token FROM (
        SELECT id, state, lease_token, lease_holder, lease_expires_at FROM tasks INDEXED BY tasks_live
        WHERE queue = ${queue} AND finished_at IS NULL AND priority = ${segment.priority} AND run_at <= ${now}
        ORDER BY run_at, id LIMIT ${SESSION_LEASE_WINDOW})
      WHERE state = 'processing' AND lease_expires_at > ${now}
        AND substr(lease_holder, -${suffix.length}) = ${suffix}`);
    for (const r of rows) held.push({ id: r.id, leaseToken: r.lease_token });
  }
  return held;
}
