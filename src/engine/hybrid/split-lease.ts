import { sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { QUEUE_ROW_KEY } from "../flow-lease";
import type { LeaseRequest } from "../lease";

/** Where a queue's lease order starts in each layout: the (priority, run_at) of its first due task. */
interface Fronts {
  rows: { priority: number; runAt: number } | null;
  packs: { priority: number; runAt: number } | null;
  /** The queue is paused as a whole (flow control: src/engine/flow-control.ts). */
  paused: boolean;
}

/**
 * Both layouts' fronts in one read, each the first entry of its live index (`tasks_live`, `packs_live`) that
 * is due: a row pending with its run_at come, a pack whose next leasable slot's time has come (`next_at`
 * counts a lapsed lease, a retry's time and pending slots alike). Reads the entries ahead of each front
 * (in flight, or held packs), as the lease's own walk does.
 */
async function readFronts(db: Db, queue: string, now: number): Promise<Fronts> {
  const [row] = await db.all<{ rows: string | null; packs: string | null; paused: number | null }>(sql`
    SELECT
      (SELECT paused FROM flow_keys WHERE queue = ${queue} AND key = ${QUEUE_ROW_KEY}) AS paused,
      (SELECT json_array(priority, run_at) FROM tasks
        WHERE queue = ${queue} AND finished_at IS NULL AND state = 'pending' AND run_at <= ${now}
        ORDER BY priority DESC, run_at, id LIMIT 1) AS rows,
      (SELECT json_array(priority, run_at) FROM packs
        WHERE queue = ${queue} AND finished_at IS NULL AND next_at <= ${now}
        ORDER BY priority DESC, run_at, id LIMIT 1) AS packs`);
  const front = (text: string | null | undefined) => {
    if (!text) return null;
    const [priority, runAt] = JSON.parse(text) as [number, number];
    return { priority, runAt };
  };
  return { rows: front(row?.rows), packs: front(row?.packs), paused: row?.paused === 1 };
}

/**
 * One lease over both layouts: the layout whose front comes first in lease order (priority DESC, run_at) is
 * leased first, up to `max`, and the other only for what it left — so a lease takes a queue's tasks in lease
 * order across the layouts up to one step: within one call, the second layout's tasks come after the first's
 * even where they interleave (a lease of 100 over a pack of priority 5 and rows of priority 5 and 4 takes the
 * pack's first, then the rows'). Each layout's lease is atomic on its own, and no task is in both, so no task
 * is leased twice; a call is two atomic steps, not one.
 *
 * A queue paused as a whole leases nothing from its packs (its rows: flow control's lease, which refuses
 * them). Pack tasks are never on a queue that had flow control when they were enqueued (route-enqueue.ts);
 * those of a queue that got it later are leased beside flow control's lease, outside its queue rate (they
 * have no key, so no key's limits apply to them).
 *
 * The row store is always asked when the packs leave room, whatever its front says: its front counts
 * pending rows only, and an expired or unclaimed lease it may take over is not pending.
 *
 * @example
 * const tasks = await leaseBoth(db, request, now, (side, req) => stores[side].leaseTasks(req, now));
 */
export async function leaseBoth<T>(
  db: Db,
  request: LeaseRequest,
  now: number,
  leaseOn: (side: "rows" | "packs", request: LeaseRequest) => Promise<T[]>,
): Promise<T[]> {
  const fronts = await readFronts(db, request.queue, now);
  // A paused queue's packs are left alone; its rows are flow control's to refuse (the row store's lease).
  if (fronts.packs === null || fronts.paused) return leaseOn("rows", request);
  const packsFirst =
    fronts.rows === null ||
    fronts.packs.priority > fronts.rows.priority ||
    (fronts.packs.priority === fronts.rows.priority && fronts.packs.runAt <= fronts.rows.runAt);
  const [first, second] = packsFirst ? (["packs", "rows"] as const) : (["rows", "packs"] as const);
  const taken = await leaseOn(first, request);
  if (taken.length >= request.max) return taken;
  const more = await leaseOn(second, { ...request, max: request.max - taken.length });
  return [...taken, ...more];
}
