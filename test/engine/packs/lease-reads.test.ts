import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { openDb } from "../../../src/db/client";
import { packTaskStore } from "../../../src/engine/packs/pack-store";
import { T0, uniqueQueue } from "../../helpers";
import { meteredD1 } from "../../support/metered-d1";
import { expectFiguresFromSlots } from "./pack-state";

// Rows read by the pack store's lease of pending slots (src/engine/packs/lease-sql.ts): in proportion to the
// packs it takes from, not to the `max` packs at the queue's front.

/** This file's own time range. */
const T = T0 + 12 * 86_400_000;

/** A queue of `packs` packs of `size` tasks each (one enqueue call per pack). */
async function queueOf(prefix: string, packs: number, size: number): Promise<string> {
  const queue = uniqueQueue(prefix);
  const store = packTaskStore(openDb(env.DB));
  for (let p = 0; p < packs; p++) {
    const tasks = Array.from({ length: size }, (_, i) => ({ payload: { p, i } }));
    await store.enqueueTasks(queue, tasks, T + p);
  }
  return queue;
}

/** Rows read by one lease of `max` at `now`, and how many it took. */
async function leaseRows(queue: string, max: number, now: number) {
  const metered = meteredD1(env.DB);
  const leased = await packTaskStore(openDb(metered.db)).leaseTasks(
    { queue, max, visibilityTimeoutS: 60, holder: "w" },
    now,
  );
  return { taken: leased.length, rows: metered.usage.rowsRead, statements: metered.usage.statements };
}

describe("pack store: a lease of pending slots reads rows in proportion to the packs it takes from", () => {
  it("a lease of 100 from a queue of 120 packs of 10 reads the ten packs it takes, not a hundred", async () => {
    const queue = await queueOf("lease-reads", 120, 10);
    const first = await leaseRows(queue, 100, T + 1_000);
    const one = await leaseRows(queue, 1, T + 1_001);
    const again = await leaseRows(queue, 100, T + 1_002);
    expect(first.taken).toBe(100);
    expect(one.taken).toBe(1);
    expect(again.taken).toBe(100);
    // Measured: 905 and 964 rows (counters 522, UPDATE 372, probe 11), 70 for the lease of 1; the window over
    // the first 100 packs, read by both statements, and the probe's LIMIT 100 read 1,928 and 1,979.
    expect(first.rows).toBeLessThan(1_000);
    expect(again.rows).toBeLessThan(1_100);
    await expectFiguresFromSlots(queue, T + 1_002);
  }, 120_000); // 120 enqueue calls, on a shared machine
});
