import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { runTick } from "../../src/cron/tick";
import { d1TaskStore } from "../../src/engine/d1-store";
import { queueDb, row, uniqueQueue } from "../helpers";
import { clockRange } from "../support/clock-range";

describe("the cron tick and start deadlines", () => {
  it("ends tasks not started by their deadline as expired, counts them, and leaves the rest", async () => {
    // The tick sweeps every queue: the file's own clock range (test/support/clock-range.ts).
    const start = clockRange("cron/tick-expiry").day(1);
    await runTick(env, start);
    const queue = uniqueQueue("tick-expiry");
    const store = d1TaskStore(await queueDb(queue));
    const { tasks } = await store.enqueueTasks(
      queue,
      [
        { type: "due", startBy: start + 60_000 },
        { type: "later", startBy: start + 10 * 60_000 },
      ],
      start,
    );
    const [due, later] = tasks.map((t) => t.id);

    const before = await runTick(env, start + 59_999);
    expect(before.expired).toBe(0);
    const result = await runTick(env, start + 60_000);
    expect(result.expired).toBe(1);
    expect(await row(due!)).toMatchObject({ state: "expired", finishedAt: start + 60_000 });
    expect((await row(later!)).state).toBe("pending");
    const sums = await store.sumCounters({ queue });
    expect(sums.find((s) => s.type === "due")).toMatchObject({ expired: 1 });
    // Idempotent: the next tick finds nothing more.
    expect((await runTick(env, start + 60_001)).expired).toBe(0);
  });
});
