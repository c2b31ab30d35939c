import { sql } from "drizzle-orm";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { runTick } from "../../src/cron/tick";
import { enqueueTasks } from "../../src/engine/enqueue";
import { COUNTER_MINUTES_KEPT_S } from "../../src/contracts/limits";
import { db, T0, uniqueQueue } from "../helpers";

// What each state change counts, and the fold that keeps totals exact, are task-store properties:
// test/engine/counters.test.ts. Here: the cron tick runs the fold.
describe("task counters", () => {
  it("are folded by the cron tick", async () => {
    const queue = uniqueQueue();
    // Two months before T0, apart from every other test's rows (the tests share one D1).
    const base = T0 - 60 * 86_400_000;
    await enqueueTasks(db(), queue, [{}], base);
    const result = await runTick(env, base + COUNTER_MINUTES_KEPT_S * 1000 + 120_000);
    expect(result.folded).toBeGreaterThanOrEqual(1);
    const rows = await db().all(sql`SELECT minute, enqueued FROM task_counters WHERE queue = ${queue}`);
    expect(rows).toEqual([{ minute: 0, enqueued: 1 }]);
  });
});
