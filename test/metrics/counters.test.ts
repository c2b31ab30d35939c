import { sql } from "drizzle-orm";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { runTick } from "../../src/cron/tick";
import { enqueueTasks } from "../../src/engine/enqueue";
import { COUNTER_MINUTES_KEPT_S } from "../../src/contracts/limits";
import { db, uniqueQueue } from "../helpers";
import { clockRange } from "../support/clock-range";

// What each state change counts, and the fold that keeps totals exact, are task-store properties:
// test/engine/counters.test.ts. Here: the cron tick runs the fold.
describe("task counters", () => {
  it("are folded by the cron tick", async () => {
    const queue = uniqueQueue();
    // This file's clock range. A tick folds the oldest minutes of every queue, a bounded number of them: other
    // files' older minutes (the tests share one D1) may take the first ticks, so tick until nothing is left.
    const base = clockRange("metrics/counters").day(1);
    await enqueueTasks(db(), queue, [{}], base);
    const now = base + COUNTER_MINUTES_KEPT_S * 1000 + 120_000;
    const first = await runTick(env, now);
    expect(first.folded).toBeGreaterThanOrEqual(1);
    for (let ticks = 1; (await runTick(env, now)).folded > 0; ticks++) expect(ticks).toBeLessThan(50);
    const rows = await db().all(sql`SELECT minute, enqueued FROM task_counters WHERE queue = ${queue}`);
    expect(rows).toEqual([{ minute: 0, enqueued: 1 }]);
    // Each tick walks the whole shared database (every queue's fronts, prunes, folds): late in a full run, with
    // every other file's queues in it and the machine busy, the ticks took longer than the default 15 s.
  }, 60_000);
});
