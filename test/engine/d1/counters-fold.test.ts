import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { COUNTER_MINUTES_KEPT_S } from "../../../src/contracts/limits";
import { minuteOf } from "../../../src/engine/counters";
import { db, uniqueQueue } from "../../helpers";
import { D1_STORE } from "../conformance/store-kinds";
import { clockRange } from "../../support/clock-range";

// D1 store only: where folded minutes go — one `task_counters` row per (queue, type) at minute 0 (the
// totals every read adds). That folding keeps every total is a property of every store:
// test/engine/counters.test.ts.

const store = () => D1_STORE.store();

/** The one (queue, type) row of sums, all time. */
async function sums(queue: string, type = "default") {
  const rows = await store().sumCounters({ queue });
  return rows.find((r) => r.type === type);
}

describe("task counters on D1", () => {
  it("folds minutes past COUNTER_MINUTES_KEPT_S into the (queue, type, minute 0) row", async () => {
    const queue = uniqueQueue();
    // This file's clock range (the tests share one D1; a fold takes the oldest minutes of every queue).
    const base = clockRange("engine/d1/counters-fold").day(1);
    for (let m = 0; m < 3; m++) await store().enqueueTasks(queue, [{}, {}], base + m * 60_000);
    const before = await sums(queue);
    expect(before).toMatchObject({ enqueued: 6 });
    const later = base + COUNTER_MINUTES_KEPT_S * 1000 + 10 * 60_000;
    while ((await store().foldOldCounters(later)).folded > 0);
    const rows = await db().all<{ minute: number; enqueued: number }>(
      sql`SELECT minute, enqueued FROM task_counters WHERE queue = ${queue}`,
    );
    expect(rows).toEqual([{ minute: 0, enqueued: 6 }]);
    expect(await sums(queue)).toEqual(before);
    // Recent minutes are kept as they are.
    await store().enqueueTasks(queue, [{}], later);
    await store().foldOldCounters(later);
    const recent = await store().sumCounters({ queue, since: later });
    expect(recent).toEqual([expect.objectContaining({ enqueued: 1 })]);
    expect(minuteOf(later)).toBeGreaterThan(0);
  });
});
