import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { openDb } from "../../../src/db/client";
import { LIVE_FRONT_MIN_PENDING } from "../../../src/contracts/limits";
import { d1TaskStore } from "../../../src/engine/d1-store";
import { listLiveSegments, type QueueFront } from "../../../src/engine/live-front";
import { db, uniqueQueue } from "../../helpers";
import { clockRange } from "../../support/clock-range";
import { meteredD1 } from "../../support/metered-d1";
import { seedPending } from "../../support/seed-tasks";
import { lapsedMix } from "../conformance/lapsed-mix";
import { storeFixtures } from "../conformance/fixtures";
import { D1_STORE } from "../conformance/store-kinds";

// D1 store only: how the walk reads the `tasks_live` index — its segments, the index entries it reads, its
// look-out of LIVE_FRONT_MIN_PENDING due tasks per segment (src/engine/live-front.ts). What it finds is a
// property of every store: test/engine/live-front.test.ts.

/** The front is read over every queue, and reaps take every lapsed lease: a clock range of its own. */
const clock = clockRange("engine/d1/live-front");
const { store } = storeFixtures(D1_STORE);

async function frontOf(queue: string, now: number, dueCount = 0): Promise<QueueFront | undefined> {
  return (await store().readLiveFront(now, { dueCountFor: () => dueCount })).find((f) => f.queue === queue);
}

async function drop(queue: string): Promise<void> {
  await db().run(sql`DELETE FROM tasks WHERE queue = ${queue}`);
}

describe("the live index's front on D1", () => {
  it("is read one (queue, priority) segment of the index at a time", async () => {
    const t = clock.day(0);
    const queue = uniqueQueue("front");
    await lapsedMix(store(), queue, t);
    const segments = (await listLiveSegments(db())).filter((s) => s.queue === queue);
    expect(segments).toEqual([
      { queue, priority: 5 },
      { queue, priority: 0 },
    ]);
    await drop(queue);
  });

  it("counts due tasks up to what is asked, reading about as many index entries", async () => {
    const now = clock.day(1);
    const queue = uniqueQueue("front-count");
    await seedPending(db(), queue, 3 * LIVE_FRONT_MIN_PENDING, { runAt: now - 60_000, createdAt: now - 60_000 });
    // Files share the database: count this queue's statements only (the walk binds the queue it reads).
    const meter = meteredD1(env.DB, { only: (values) => values.includes(queue) });
    const before = (await d1TaskStore(openDb(meter.db)).readLiveFront(now)).find((f) => f.queue === queue);
    // Nothing asked: the walk's own look-out for lapsed leases, LIVE_FRONT_MIN_PENDING due tasks.
    expect(before).toMatchObject({ due: LIVE_FRONT_MIN_PENDING, capped: true, oldest_due_at: now - 60_000 });
    const lookOut = meter.usage.rowsRead;

    meter.reset();
    const asked = 2 * LIVE_FRONT_MIN_PENDING + 1;
    const counted = (await d1TaskStore(openDb(meter.db)).readLiveFront(now, { dueCountFor: () => asked })).find(
      (f) => f.queue === queue,
    );
    expect(counted).toMatchObject({ due: asked, capped: true });
    // The extra reads are the extra tasks counted (within a few for each statement), not the other 999.
    expect(meter.usage.rowsRead - lookOut).toBeGreaterThanOrEqual(asked - LIVE_FRONT_MIN_PENDING);
    expect(meter.usage.rowsRead - lookOut).toBeLessThan(asked - LIVE_FRONT_MIN_PENDING + 20);

    const all = await frontOf(queue, now, 10 * LIVE_FRONT_MIN_PENDING);
    expect(all).toMatchObject({ due: 3 * LIVE_FRONT_MIN_PENDING, capped: false });
    await drop(queue);
  });

  it("finds a lapsed lease behind due tasks put ahead of it once fewer than the look-out are ahead", async () => {
    const t = clock.day(2);
    const queue = uniqueQueue("front-behind");
    const [task] = (await store().enqueueTasks(queue, [{}], t)).tasks;
    await store().leaseTasks({ queue, max: 1, visibilityTimeoutS: 30, holder: "w" }, t);
    // Enqueued later with a run_at before the leased task's: ahead of it in lease order.
    await seedPending(db(), queue, LIVE_FRONT_MIN_PENDING + 1, { runAt: t - 1000, createdAt: t + 1000 });
    const now = t + 60_000;
    expect((await frontOf(queue, now))!.lapsed).toEqual([]);
    expect((await store().reapExpiredLeases(now)).reaped.filter((r) => r.queue === queue)).toEqual([]);

    // A worker takes two of those ahead: now fewer than the look-out are, and the walk reaches the lapse.
    await store().leaseTasks({ queue, max: 2, visibilityTimeoutS: 3600, holder: "w" }, now);
    expect((await frontOf(queue, now))!.lapsed.map((l) => l.id)).toEqual([task!.id]);
    const { reaped } = await store().reapExpiredLeases(now);
    expect(reaped.filter((r) => r.queue === queue)).toMatchObject([{ id: task!.id, state: "pending" }]);
    await drop(queue);
  });
});
