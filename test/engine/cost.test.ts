import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { openDb } from "../../src/db/client";
import { completeTasks } from "../../src/engine/complete";
import { enqueueTasks } from "../../src/engine/enqueue";
import { leaseTasks } from "../../src/engine/lease";
import { db, T0, uniqueQueue } from "../helpers";
import { meteredD1 } from "../support/metered-d1";

// The cost design (src/db/schema.ts) promises 4 rows written for a task's successful life, measured
// with D1's own `meta.rows_written`, plus what the task counters add (src/engine/counters.ts): one row per
// call per (queue, type) touched — 3 rows per batch for enqueue, lease and complete. This fails if an index
// or a statement is added that breaks it.
describe("D1 rows written per task", () => {
  it("is 4 for enqueue -> lease -> complete (2 + 1 + 1), plus 1 counter row per call: 4.03 at batch 100", async () => {
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

    // The task's own writes (2n, n, n) and one counter row per call.
    expect({ enqueue: enqueueWritten, lease: leaseWritten, complete: completeWritten }).toEqual({
      enqueue: 2 * n + 1,
      lease: n + 1,
      complete: n + 1,
    });
    expect((enqueueWritten + leaseWritten + completeWritten) / n).toBe(4.03);
  });

  it("is 4 + 3 counter rows = 7 at batch 1 (each call upserts its own counter row)", async () => {
    const meter = meteredD1(env.DB);
    const db = openDb(meter.db);
    const queue = uniqueQueue();
    await enqueueTasks(db, queue, [{ payload: { i: 0 } }], T0);
    const enqueueWritten = meter.usage.rowsWritten;
    meter.reset();
    const [task] = await leaseTasks(db, { queue, max: 1, visibilityTimeoutS: 30, holder: "w" }, T0 + 1);
    const leaseWritten = meter.usage.rowsWritten;
    meter.reset();
    await completeTasks(db, [{ id: task!.id, leaseToken: task!.leaseToken! }], T0 + 2);
    const completeWritten = meter.usage.rowsWritten;
    expect({ enqueue: enqueueWritten, lease: leaseWritten, complete: completeWritten }).toEqual({
      enqueue: 3,
      lease: 2,
      complete: 2,
    });
  });

  it("a lease that takes over 100 lapsed leases writes what any lease of 100 does: the lapsed attempts are counted in its counter row", async () => {
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
    await leaseTasks(db, { queue, max: n, visibilityTimeoutS: 1, holder: "crashed" }, T0);
    meter.reset();
    // Past the expiry and the first attempt's 10 s backoff: every task is taken over.
    const taken = await leaseTasks(db, { queue, max: n, visibilityTimeoutS: 30, holder: "w" }, T0 + 11_000);
    expect(taken.filter((t) => t.leaseTookOverExpired === 1)).toHaveLength(n);
    expect(meter.usage.rowsWritten).toBe(n + 1);
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

  it("costs one more row at enqueue for a dedupe key (its unique-index entry), plus the call's counter row", async () => {
    const meter = meteredD1(env.DB);
    const db = openDb(meter.db);
    const queue = uniqueQueue();
    await enqueueTasks(
      db,
      queue,
      Array.from({ length: 10 }, (_, i) => ({ dedupeKey: `k${i}` })),
      T0,
    );
    expect(meter.usage.rowsWritten).toBe(30 + 1);
  });
});
