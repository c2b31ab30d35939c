import { sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import type { LiveCounts, LiveFigures } from "../live-figures";
import { configsOf, readLivePacks } from "./live-packs";
import type { Pack, Slot } from "./pack-row";
import { isLive, leasableAt, slotRunAt } from "./slot-rules";

/**
 * The live reads of the port's TaskReads over packs — `nextRunAt`, `countLiveTasks`, `liveFigures` — with the
 * D1 store's answers (src/engine/lease.ts, src/engine/live-figures.ts), computed per slot from the live packs
 * (live-packs.ts): they read the live index and live packs only, never a finished one, as the D1 store reads
 * its live index only.
 */

/** A live slot of a live pack, with the pack it is in. */
function* liveSlots(packs: Pack[]): Generator<{ pack: Pack; slot: Slot }> {
  for (const pack of packs) for (const slot of pack.slots) if (isLive(slot)) yield { pack, slot };
}

const isPending = (slot: Slot) => slot.st === "p" || slot.st === "w";

/**
 * nextRunAt: the earliest time after `now` a live task of the queue becomes leasable — a pending slot's run
 * time; with `leases`, also a held lease's (slot-rules.ts `leasableAt`: a provisional lease's claim
 * deadline, an expired lease's backoff) — or null.
 *
 * @example
 * const alarmAt = await packNextRunAt(db, "emails", Date.now(), { leases: true });
 */
export async function packNextRunAt(
  db: Db,
  queue: string,
  now: number,
  opts: { leases?: boolean } = {},
): Promise<number | null> {
  const packs = await readLivePacks(db, queue);
  if (packs.length === 0) return null;
  const config = await configsOf(db)(queue);
  let next: number | null = null;
  for (const { pack, slot } of liveSlots(packs)) {
    if (!opts.leases && !isPending(slot)) continue;
    const at = leasableAt(pack, slot, config);
    if (at !== null && at > now && (next === null || at < next)) next = at;
  }
  return next;
}

/**
 * countLiveTasks: one queue's pending slots due at `now`, pending not yet due, and processing.
 *
 * @example
 * const { due } = await countPackLiveTasks(db, "emails", Date.now());
 */
export async function countPackLiveTasks(db: Db, queue: string, now: number): Promise<LiveCounts> {
  const counts: LiveCounts = { due: 0, notDue: 0, processing: 0 };
  for (const { pack, slot } of liveSlots(await readLivePacks(db, queue))) {
    if (slot.st === "r") counts.processing++;
    else if (slotRunAt(pack, slot) <= now) counts.due++;
    else counts.notDue++;
  }
  return counts;
}

/**
 * liveFigures: the gauges of every queue with live tasks (or of one), by queue name: pending, processing, due
 * and the oldest due run time, expired leases, and leases first started longer ago than the queue's
 * max_run_s.
 *
 * @example
 * const [figures] = await packLiveFigures(db, Date.now(), "emails");
 */
export async function packLiveFigures(db: Db, now: number, queue?: string): Promise<LiveFigures[]> {
  const packs = await readLivePacks(db, queue);
  if (packs.length === 0) return [];
  const maxRunMs = new Map(
    (
      await db.all<{ name: string; max_run_s: number }>(
        sql`SELECT name, max_run_s FROM queues WHERE max_run_s IS NOT NULL`,
      )
    ).map((r) => [r.name, r.max_run_s * 1000]),
  );
  const byQueue = new Map<string, LiveFigures>();
  for (const { pack, slot } of liveSlots(packs)) {
    let f = byQueue.get(pack.queue);
    if (!f) {
      f = { queue: pack.queue, pending: 0, processing: 0, due: 0, oldest_due_at: null, lease_expired: 0, overrun: 0 };
      byQueue.set(pack.queue, f);
    }
    if (slot.st === "r") {
      f.processing++;
      if (slot.lease!.e <= now) f.lease_expired++;
      const maxRun = maxRunMs.get(pack.queue);
      if (maxRun !== undefined && typeof slot.body.st === "number" && slot.body.st <= now - maxRun) f.overrun++;
      continue;
    }
    f.pending++;
    const runAt = slotRunAt(pack, slot);
    if (runAt > now) continue;
    f.due++;
    f.oldest_due_at = f.oldest_due_at === null ? runAt : Math.min(f.oldest_due_at, runAt);
  }
  return [...byQueue.values()].sort((a, b) => (a.queue < b.queue ? -1 : a.queue > b.queue ? 1 : 0));
}
