import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { openDb } from "../../../src/db/client";
import {
  completePackTasks,
  extendPackLeases,
  failPackTasks,
  heartbeatPackTask,
  releasePackTasks,
} from "../../../src/engine/packs/holder-writes";
import { uniqueQueue } from "../../helpers";
import { meteredD1 } from "../../support/metered-d1";
import { expectFiguresFromSlots, many, store, T } from "./pack-state";

// Rows read by a holder's spliced write (src/engine/packs/slot-splice.ts) are in proportion to the slots it
// writes, not to its pack's: the pack's figures are one expression over the row, not a walk of its slots.

/** This file's own time range, after the other ack-splice files'. */
const T1 = T + 3 * 86_400_000;

/** A queue with one pack of `n` tasks, leased whole at T1 (each slot its own lease entry). */
async function leasedPack(prefix: string, n: number) {
  const queue = uniqueQueue(prefix);
  await store().enqueueTasks(queue, many(n), T1);
  const leased = await store().leaseTasks({ queue, max: n, visibilityTimeoutS: 60, holder: "w" }, T1 + 1);
  expect(leased).toHaveLength(n);
  return { queue, leased: leased.map((t) => ({ id: t.id, leaseToken: t.leaseToken! })) };
}

/** Rows read by `write`, run on a metered binding. */
async function rowsRead(write: (db: ReturnType<typeof openDb>) => Promise<unknown>): Promise<number> {
  const metered = meteredD1(env.DB);
  await write(openDb(metered.db));
  return metered.usage.rowsRead;
}

/** The holder's writes of a pack of `n` leased slots, a few slots each: rows read by each. */
async function writesOf(n: number) {
  const { queue, leased } = await leasedPack(`splice-reads-${n}`, n);
  const t = (k: number) => leased[k]!;
  const rows = {
    // Each heartbeat the first beat of its slot: the slot's old lease lapse is the pack's rare_at (tied).
    beat: await rowsRead((d) => heartbeatPackTask(d, { ...t(0), extendS: 30, progress: 10 }, T1 + 10)),
    // Slot 1's lapse still tied with the other untouched slots'.
    beat2: await rowsRead((d) => heartbeatPackTask(d, { ...t(1), extendS: 30 }, T1 + 11)),
    extend: await rowsRead((d) => extendPackLeases(d, [t(2), t(3)], T1 + 12)),
    complete: await rowsRead((d) => completePackTasks(d, [t(4), { ...t(5), result: { ok: 1 } }], T1 + 13)),
    fail: await rowsRead((d) => failPackTasks(d, [{ ...t(6), message: "again" }], T1 + 14)),
    release: await rowsRead((d) => releasePackTasks(d, [t(7)], T1 + 15)),
  };
  // Every slot but one beaten at its own time, then the last beaten twice: each beat the earliest lapse of
  // the pack's processing slots (no other slot tied with it), so the pack's rare_at is the next one's.
  for (let k = 8; k < n; k++) await heartbeatPackTask(openDb(env.DB), { ...t(k), extendS: 30 }, T1 + 20 + k);
  const sole = await rowsRead((d) => heartbeatPackTask(d, { ...t(0), extendS: 30 }, T1 + 200));
  await expectFiguresFromSlots(queue, T1 + 200);
  return { ...rows, sole };
}

describe("pack store: a holder's spliced write reads rows in proportion to its slots, not its pack's", () => {
  it("heartbeat, extend, complete, fail, release: the same rows on a pack of 100 as on a pack of 12", async () => {
    const small = await writesOf(12);
    const large = await writesOf(100);
    expect(large).toEqual(small);
    // A beat: the slot's pack read by its primary key, the queue's config, the guard and the write (14 rows
    // measured; the walk of the pack's processing slots read 516 on the pack of 100).
    expect(large.beat).toBeLessThanOrEqual(16);
    expect(large.sole).toBeLessThanOrEqual(16);
  }, 120_000); // ~110 sequential holder writes, on a shared machine
});
