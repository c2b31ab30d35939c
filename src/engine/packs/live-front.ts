import { sql, type SQL } from "drizzle-orm";
import { batchAll, type Db } from "../../db/client";
import { LIVE_FRONT_BATCH, LIVE_FRONT_MIN_PENDING, MAX_ROWS_PER_TICK_STATEMENT } from "../../contracts/limits";
import { emptyFront, listLiveSegments, type FrontOptions, type LiveSegment, type QueueFront } from "../live-front";
import { configsOf, decodeLiveRows, livePacksSql } from "./live-packs";
import { PACK_SLOTS } from "./pack-ids";
import { slotId, type Pack } from "./pack-row";
import { isLive, leasableAt, slotRunAt } from "./slot-rules";

/**
 * The cron tick's live front over packs (the port's `readLiveFront`; the D1 store's is src/engine/live-front.ts,
 * whose module comment says why the front is enough). `packs_live` orders each queue's live packs by
 * (priority DESC, run_at, id), lease order; a (queue, priority) run of it is a segment. A pack whose run time
 * has come holds the segment's tasks in flight and its due pending tasks (a retried slot's own run time is
 * after its lease, so after its pack's); a pack not yet due holds only pending slots. So the walk reads each
 * segment's packs with `run_at <= now` from its start, in lease order, and stops once it has passed
 * LIVE_FRONT_MIN_PENDING due pending slots of the segment and as many of the queue's as `dueCountFor` asks:
 * its reads grow with the packs in flight and the due backlog up to those counts, never with the packs not
 * yet due or the finished ones. Each pack is read once, with only the body fields a figure needs
 * (live-packs.ts).
 */

/** Packs of each segment the first look reads, many segments per round trip. Why 2: LIVE_FRONT_FIRST_LOOK's
 * 200 entries of the D1 store are 200 tasks, two full packs; a segment with more goes on chunk by chunk. */
export const PACK_FRONT_FIRST_LOOK = 2;

/** Most packs one statement of the walk reads after the first look: MAX_ROWS_PER_TICK_STATEMENT tasks' worth
 * of full packs (50), the D1 store's bound per statement counted in tasks, so requests run between them. */
export const PACK_FRONT_CHUNK = MAX_ROWS_PER_TICK_STATEMENT / PACK_SLOTS;

/** A segment's walk so far: where it goes on from (the last pack read), whether its due part is done. */
interface Walk {
  segment: LiveSegment;
  after: { runAt: number; id: string } | null;
  done: boolean;
  pending: number;
}

/** Up to `limit` due packs of a segment after the walk's position, in lease order. */
function chunkSql(walk: Walk, now: number, limit: number): SQL {
  const { queue, priority } = walk.segment;
  const from = walk.after === null ? sql`` : sql` AND (run_at, id) > (${walk.after.runAt}, ${walk.after.id})`;
  return livePacksSql(sql` AND queue = ${queue} AND priority = ${priority} AND run_at <= ${now}${from}`, limit);
}

/**
 * readLiveFront: walks the front of every live segment of packs (see the module comment) and returns, per
 * queue, what it saw: due pending slots (counted up to what `dueCountFor` asks), the oldest due, expired and
 * overrunning leases, whether a slot is leasable, and the lapsed leases (their task ids) to reap. Read-only.
 *
 * @example
 * const fronts = await readPackLiveFront(db, Date.now(), { dueCountFor: () => 10_000 });
 */
export async function readPackLiveFront(db: Db, now: number, opts: FrontOptions = {}): Promise<QueueFront[]> {
  const segments = await listLiveSegments(db, sql`packs INDEXED BY packs_live`);
  if (segments.length === 0) return [];
  const configOf = configsOf(db);
  const fronts = new Map<string, QueueFront>();
  const frontOf = (queue: string) => {
    let front = fronts.get(queue);
    if (!front) fronts.set(queue, (front = emptyFront(queue)));
    return front;
  };
  const add = async (walk: Walk, packs: Pack[], limit: number) => {
    const front = frontOf(walk.segment.queue);
    const config = await configOf(walk.segment.queue);
    const maxRunMs = config.max_run_s === null ? null : config.max_run_s * 1000;
    for (const pack of packs) {
      pack.slots.forEach((slot, k) => {
        if (!isLive(slot)) return;
        const at = leasableAt(pack, slot, config);
        if (at !== null && at <= now) front.leasable = true;
        if (slot.st === "r") {
          const expired = slot.lease!.e <= now;
          const started = slot.body.st;
          const overrun = maxRunMs !== null && typeof started === "number" && started <= now - maxRunMs;
          if (expired) front.lease_expired++;
          if (overrun) front.overrun++;
          if (expired) front.lapsed.push({ id: slotId(pack, k), expired, overrun });
          return;
        }
        const runAt = slotRunAt(pack, slot);
        if (runAt > now) return;
        front.due++;
        walk.pending++;
        front.oldest_due_at = Math.min(front.oldest_due_at ?? Infinity, runAt);
      });
    }
    const last = packs.at(-1);
    if (last) walk.after = { runAt: last.runAt, id: last.id };
    walk.done = packs.length < limit;
  };

  // First look: every segment's first packs, many segments per round trip.
  const walks: Walk[] = segments.map((segment) => ({ segment, after: null, done: false, pending: 0 }));
  for (let i = 0; i < walks.length; i += LIVE_FRONT_BATCH) {
    const group = walks.slice(i, i + LIVE_FRONT_BATCH);
    const results = await batchAll(
      db,
      group.map((w) => chunkSql(w, now, PACK_FRONT_FIRST_LOOK)),
    );
    for (const [k, walk] of group.entries()) await add(walk, decodeLiveRows(results[k]!), PACK_FRONT_FIRST_LOOK);
  }
  // Then on, segment by segment in lease order, while the segment's own look-out or the queue's count wants more.
  for (const walk of walks) {
    const queue = walk.segment.queue;
    const wanted = () =>
      Math.max(LIVE_FRONT_MIN_PENDING - walk.pending, (opts.dueCountFor?.(queue) ?? 0) - frontOf(queue).due);
    while (!walk.done && wanted() > 0) {
      // As many packs as the slots wanted fill when full (a pack's due slots are known once it is read).
      const limit = Math.min(PACK_FRONT_CHUNK, Math.ceil(wanted() / PACK_SLOTS));
      await add(walk, decodeLiveRows(await db.all(chunkSql(walk, now, limit))), limit);
    }
    if (!walk.done) frontOf(queue).capped = true;
  }
  return [...fronts.values()];
}
