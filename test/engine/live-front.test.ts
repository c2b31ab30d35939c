import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { openDb } from "../../src/db/client";
import { LIVE_FRONT_MIN_PENDING } from "../../src/contracts/limits";
import { enqueueTasks } from "../../src/engine/enqueue";
import { leaseTasks } from "../../src/engine/lease";
import { frontsAfterReap, listLiveSegments, readLiveFront, type QueueFront } from "../../src/engine/live-front";
import { putQueueConfig } from "../../src/engine/queue-config";
import { reapExpiredLeases } from "../../src/engine/reap";
import { db, PROCESSORS, T0, uniqueQueue } from "../helpers";
import { meteredD1 } from "../support/metered-d1";
import { seedPending } from "../support/seed-tasks";

const DAY = 86_400_000;

async function frontOf(queue: string, now: number, dueCount = 0): Promise<QueueFront | undefined> {
  return (await readLiveFront(db(), now, { dueCountFor: () => dueCount })).find((f) => f.queue === queue);
}

async function drop(queue: string): Promise<void> {
  await db().run(sql`DELETE FROM tasks WHERE queue = ${queue}`);
}

describe("the live index's front", () => {
  it("finds every lapsed lease, in every priority, and the figures health reads", async () => {
    const t = T0 + 200 * DAY;
    const queue = uniqueQueue("front");
    await putQueueConfig(db(), queue, { max_run_s: 60 }, t, PROCESSORS);
    const high = await enqueueTasks(
      db(),
      queue,
      Array.from({ length: 4 }, () => ({ priority: 5 })),
      t,
    );
    const low = await enqueueTasks(
      db(),
      queue,
      Array.from({ length: 6 }, () => ({ priority: 0 })),
      t,
    );
    // Lease order: the 4 high-priority tasks first (2 short leases, 2 long), then the low ones.
    const expiring = await leaseTasks(db(), { queue, max: 2, visibilityTimeoutS: 10, holder: "w" }, t);
    const running = await leaseTasks(db(), { queue, max: 2, visibilityTimeoutS: 3600, holder: "w" }, t);
    const handed = await leaseTasks(
      db(),
      { queue, max: 1, visibilityTimeoutS: 3600, holder: "poll", provisional: true },
      t + 1000,
    );
    expect([...expiring, ...running].map((r) => r.id).sort()).toEqual(high.tasks.map((r) => r.id).sort());
    expect(handed[0]!.id).toBe(low.tasks[0]!.id);
    const later = await enqueueTasks(db(), queue, [{ runAt: t + 3 * DAY }], t);

    // The short leases expired; the provisional one went unclaimed past its claim window but has not
    // expired, so it is still its holder's (a lease may take it over; the reaper leaves it); all ran > 60 s.
    const now = t + 120_000;
    const front = await frontOf(queue, now);
    expect(front).toMatchObject({
      queue,
      due: 5, // the low-priority tasks not leased; the delayed one is not due
      capped: false,
      oldest_due_at: t,
      lease_expired: 2,
      overrun: 5,
      leasable: true,
    });
    expect(front!.lapsed.map((l) => l.id).sort()).toEqual(expiring.map((r) => r.id).sort());

    const segments = (await listLiveSegments(db())).filter((s) => s.queue === queue);
    expect(segments).toEqual([
      { queue, priority: 5 },
      { queue, priority: 0 },
    ]);
    expect(later.tasks).toHaveLength(1);
    await drop(queue);
  });

  it("counts due tasks up to what is asked, reading about as many index entries", async () => {
    const now = T0 + 201 * DAY;
    const queue = uniqueQueue("front-count");
    await seedPending(db(), queue, 3 * LIVE_FRONT_MIN_PENDING, { runAt: now - 60_000, createdAt: now - 60_000 });
    // Files share the database: count this queue's statements only (the walk binds the queue it reads).
    const meter = meteredD1(env.DB, { only: (values) => values.includes(queue) });
    const before = (await readLiveFront(openDb(meter.db), now)).find((f) => f.queue === queue);
    // Nothing asked: the walk's own look-out for lapsed leases, LIVE_FRONT_MIN_PENDING due tasks.
    expect(before).toMatchObject({ due: LIVE_FRONT_MIN_PENDING, capped: true, oldest_due_at: now - 60_000 });
    const lookOut = meter.usage.rowsRead;

    meter.reset();
    const asked = 2 * LIVE_FRONT_MIN_PENDING + 1;
    const counted = (await readLiveFront(openDb(meter.db), now, { dueCountFor: () => asked })).find(
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
    const t = T0 + 202 * DAY;
    const queue = uniqueQueue("front-behind");
    const [task] = (await enqueueTasks(db(), queue, [{}], t)).tasks;
    await leaseTasks(db(), { queue, max: 1, visibilityTimeoutS: 30, holder: "w" }, t);
    // Enqueued later with a run_at before the leased task's: ahead of it in lease order.
    await seedPending(db(), queue, LIVE_FRONT_MIN_PENDING + 1, { runAt: t - 1000, createdAt: t + 1000 });
    const now = t + 60_000;
    expect((await frontOf(queue, now))!.lapsed).toEqual([]);
    expect((await reapExpiredLeases(db(), now)).reaped.filter((r) => r.queue === queue)).toEqual([]);

    // A worker takes two of those ahead: now fewer than the look-out are, and the walk reaches the lapse.
    await leaseTasks(db(), { queue, max: 2, visibilityTimeoutS: 3600, holder: "w" }, now);
    expect((await frontOf(queue, now))!.lapsed.map((l) => l.id)).toEqual([task!.id]);
    const { reaped } = await reapExpiredLeases(db(), now);
    expect(reaped.filter((r) => r.queue === queue)).toMatchObject([{ id: task!.id, state: "pending" }]);
    await drop(queue);
  });

  it("after the reaper: reaped tasks leave the lease figures, and those due again count as due", () => {
    const front: QueueFront = {
      queue: "q",
      due: 3,
      capped: false,
      oldest_due_at: 500,
      lease_expired: 2,
      overrun: 1,
      leasable: true,
      lapsed: [
        { id: "a", expired: true, overrun: true },
        { id: "b", expired: true, overrun: false },
        { id: "c", expired: false, overrun: false },
      ],
    };
    const [after] = frontsAfterReap(
      [front],
      [
        { id: "a", queue: "q", state: "dead", run_at: 100 },
        { id: "b", queue: "q", state: "pending", run_at: 5000 }, // after backoff: not yet due
        { id: "c", queue: "q", state: "pending", run_at: 200 }, // unclaimed, handed back: due at once
      ],
      1000,
    );
    expect(after).toMatchObject({ due: 4, oldest_due_at: 200, lease_expired: 0, overrun: 0 });
    expect(front).toMatchObject({ due: 3, lease_expired: 2 });
  });
});
