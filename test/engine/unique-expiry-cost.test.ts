import { expect, it } from "vitest";
import { uniqueQueue } from "../helpers";
import { clockRange } from "../support/clock-range";
import { describeStore } from "./conformance/store-kinds";

// The rows a key and a start deadline add (the store's CostPromise, test/engine/conformance/store-kinds.ts),
// measured with the store's own meter (for D1, D1's `meta.rows_written`), and what they leave unchanged:
// a plain task's life costs what test/engine/cost.test.ts holds it to. Own clock range (test/support/clock-range.ts):
// the expiry pass reads every queue's due deadlines.
const t = clockRange("engine/unique-expiry-cost").day(1);
const n = 100;

describeStore("rows written by keys and deadlines", (kind) => {
  it("an enqueue of 100 tasks with new idempotency keys writes 3 rows per task and a counter row; a repeat within the window writes none", async () => {
    const { store, rowsWritten, reset } = kind.measure();
    const queue = uniqueQueue("cost-key");
    const tasks = Array.from({ length: n }, (_, i) => ({
      payload: { i },
      unique: { mode: "idempotency" as const, key: `k${i}`, windowMs: 60_000 },
    }));
    await store.enqueueTasks(queue, tasks, t);
    expect(rowsWritten()).toBe(kind.costs.uniqueEnqueue(n));
    reset();
    const again = await store.enqueueTasks(queue, tasks, t + 1);
    expect(again.tasks.every((x) => x.deduplicated)).toBe(true);
    expect(rowsWritten()).toBe(0);
  });

  it("a debounce that folds into its waiting task writes the task's row and live-index entry", async () => {
    const { store, rowsWritten, reset } = kind.measure();
    const queue = uniqueQueue("cost-debounce");
    const unique = { mode: "debounce" as const, key: "d", windowMs: 1000 };
    await store.enqueueTasks(queue, [{ payload: 1, unique }], t);
    expect(rowsWritten()).toBe(kind.costs.uniqueEnqueue(1));
    reset();
    await store.enqueueTasks(queue, [{ payload: 2, unique }], t + 10);
    expect(rowsWritten()).toBe(kind.costs.debounceReplace);
  });

  it("an enqueue of 100 tasks with a start deadline writes 3 rows per task; their lease costs what a plain lease does; an expiry pass of 100 writes one row each and a counter row", async () => {
    const { store, rowsWritten, reset } = kind.measure();
    const leased = uniqueQueue("cost-deadline-leased");
    const expiring = uniqueQueue("cost-deadline-expired");
    const tasks = Array.from({ length: n }, (_, i) => ({ payload: { i }, startBy: t + 1000 }));
    await store.enqueueTasks(leased, tasks, t);
    expect(rowsWritten()).toBe(kind.costs.expiringEnqueue(n));
    reset();
    expect(await store.leaseTasks({ queue: leased, max: n, visibilityTimeoutS: 30, holder: "w" }, t + 1)).toHaveLength(
      n,
    );
    expect(rowsWritten()).toBe(kind.costs.life(n).lease);
    await store.enqueueTasks(expiring, tasks, t);
    reset();
    const ended = await store.expireOverdueTasks(t + 1000);
    expect(ended).toHaveLength(n);
    expect(rowsWritten()).toBe(kind.costs.expirePass(n));
  });
});
