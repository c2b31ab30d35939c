import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { openDb } from "../../src/db/client";
import { completeTasks } from "../../src/engine/complete";
import { enqueueTasks } from "../../src/engine/enqueue";
import { leaseTasks } from "../../src/engine/lease";
import { db, T0, uniqueQueue } from "../helpers";
import { meteredD1 } from "../support/metered-d1";

// The cost design (src/db/schema.ts) promises 4 rows written for a task's successful life, measured
// with D1's own `meta.rows_written`. This fails if an index or a statement is added that breaks it.
describe("D1 rows written per task", () => {
  it("is 4 for enqueue -> lease -> complete (2 + 1 + 1)", async () => {
    const meter = meteredD1(env.DB);
    const db = openDb(meter.db);
    const queue = uniqueQueue();
    const n = 100;

    await enqueueTasks(
      db,
      queue,
      Array.from({ length: n }, (_, i) => ({ payload: { i } })),
      T0,
    );
    const enqueueWritten = meter.usage.rowsWritten;
    meter.reset();
    const leased = await leaseTasks(db, { queue, max: n, visibilityTimeoutS: 30, holder: "w" }, T0 + 1);
    expect(leased).toHaveLength(n);
    const leaseWritten = meter.usage.rowsWritten;
    meter.reset();
    const outcomes = await completeTasks(
      db,
      leased.map((t) => ({ id: t.id, leaseToken: t.leaseToken! })),
      T0 + 2,
    );
    expect(outcomes.every((o) => o.ok)).toBe(true);
    const completeWritten = meter.usage.rowsWritten;

    expect({ enqueue: enqueueWritten / n, lease: leaseWritten / n, complete: completeWritten / n }).toEqual({
      enqueue: 2,
      lease: 1,
      complete: 1,
    });
  });

  it("reads rows in proportion to the ack when completing, not to the table", async () => {
    // 2,000 other tasks in the table: a complete that scanned it (e.g. for its ack nonce) would read them all.
    await enqueueTasks(
      db(),
      uniqueQueue("filler"),
      Array.from({ length: 2000 }, (_, i) => ({ payload: { i } })),
      T0,
    );
    const meter = meteredD1(env.DB);
    const metered = openDb(meter.db);
    const queue = uniqueQueue();
    await enqueueTasks(
      metered,
      queue,
      Array.from({ length: 10 }, (_, i) => ({ payload: { i } })),
      T0,
    );
    const leased = await leaseTasks(metered, { queue, max: 10, visibilityTimeoutS: 30, holder: "w" }, T0 + 1);
    meter.reset();
    await completeTasks(
      metered,
      leased.map((t) => ({ id: t.id, leaseToken: t.leaseToken! })),
      T0 + 2,
    );
    expect(meter.usage.rowsRead).toBeLessThan(200);
  });

  it("costs one more row at enqueue for a dedupe key (its unique-index entry)", async () => {
    const meter = meteredD1(env.DB);
    const db = openDb(meter.db);
    const queue = uniqueQueue();
    await enqueueTasks(
      db,
      queue,
      Array.from({ length: 10 }, (_, i) => ({ dedupeKey: `k${i}` })),
      T0,
    );
    expect(meter.usage.rowsWritten).toBe(30);
  });
});
