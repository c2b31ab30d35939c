import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { runTick } from "../../src/cron/tick";
import { cancelTask } from "../../src/engine/cancel";
import { completeTasks } from "../../src/engine/complete";
import { enqueueTasks } from "../../src/engine/enqueue";
import { failTasks } from "../../src/engine/fail";
import { leaseTasks } from "../../src/engine/lease";
import { DEFAULT_QUEUE_CONFIG, putQueueConfig } from "../../src/engine/queue-config";
import { backoffBoundsMs } from "../../src/engine/retry-policy";
import worker from "../../src/index";
import { db, row, snapshot, uniqueQueue, PROCESSORS } from "../helpers";
import { clockRange } from "../support/clock-range";
import { untilWaiting } from "../support/coordinator";

const clock = clockRange("cron/tick");

/**
 * Every tick reaps and prunes the whole database, not one queue. To make a test's counts exact, each test
 * works in its own day of this file's clock range and first runs a tick at the end of that day: whatever
 * this file's earlier tests left that a tick in this window could touch is handled then, before this test
 * creates its tasks.
 */
async function isolatedWindow(day: number): Promise<number> {
  const start = clock.day(day);
  await runTick(env, clock.day(day + 1));
  return start;
}

async function enqueueOne(queue: string, now: number, extra: { maxAttempts?: number } = {}): Promise<string> {
  const { tasks } = await enqueueTasks(db(), queue, [{ payload: { at: now }, ...extra }], now);
  return tasks[0]!.id;
}

async function leaseOne(queue: string, now: number, visibilityTimeoutS = 30) {
  const [task] = await leaseTasks(db(), { queue, max: 1, visibilityTimeoutS, holder: "w" }, now);
  if (!task) throw new Error(`nothing to lease in ${queue} at ${now}`);
  return task;
}

interface ErrorEntry {
  attempt: number;
  at: number;
  message: string;
  kind: string;
}

async function errorsOf(id: string): Promise<ErrorEntry[]> {
  return JSON.parse((await row(id)).errors) as ErrorEntry[];
}

async function countRows(ids: string[]): Promise<number> {
  const [result] = await db().all<{ n: number }>(
    sql`SELECT count(*) AS n FROM tasks WHERE id IN (SELECT value FROM json_each(${JSON.stringify(ids)}))`,
  );
  return result!.n;
}

/** Ticks at `now` until `done` says so (at most 100: a walk of every row below the cutoff, a window a tick). */
async function ticksUntil(now: number, done: () => Promise<boolean>): Promise<{ ticks: number; pruned: number }> {
  let ticks = 0;
  let pruned = 0;
  while (!(await done())) {
    expect(++ticks).toBeLessThanOrEqual(100);
    pruned += (await runTick(env, now)).pruned;
  }
  return { ticks, pruned };
}

describe("cron tick: reaping expired leases", () => {
  it("the scheduled handler reaps an expired lease back to pending after backoff, leaving live leases alone", async () => {
    const start = await isolatedWindow(1);
    const queue = uniqueQueue("cron");
    const expiring = await enqueueOne(queue, start);
    const lease = await leaseOne(queue, start, 30);
    expect(lease.id).toBe(expiring);
    const expiresAt = start + 30_000;
    const live = await enqueueOne(queue, start);
    // Before the expired lease's backoff is due (start + 40 s), so this takes the new task; expires at 65 s.
    expect((await leaseOne(queue, start + 35_000, 30)).id).toBe(live);
    const liveBefore = await row(live);

    const tickAt = start + 60_000;
    const ctx = createExecutionContext();
    worker.scheduled(createScheduledController({ scheduledTime: tickAt, cron: "* * * * *" }), env, ctx);
    await waitOnExecutionContext(ctx);

    const reaped = await row(expiring);
    expect(reaped).toMatchObject({
      state: "pending",
      attempts: 1,
      leaseToken: null,
      leaseExpiresAt: null,
      finishedAt: null,
      updatedAt: tickAt,
    });
    const bounds = backoffBoundsMs(1, DEFAULT_QUEUE_CONFIG.backoff_base_s, DEFAULT_QUEUE_CONFIG.backoff_cap_s);
    expect(reaped.runAt - expiresAt).toBeGreaterThanOrEqual(bounds.min);
    expect(reaped.runAt - expiresAt).toBeLessThanOrEqual(bounds.max);
    expect(await errorsOf(expiring)).toEqual([
      { attempt: 1, at: expiresAt, message: "lease expired", kind: "lease_expired" },
    ]);
    expect(await row(live)).toEqual(liveBefore);
  });

  it("runTick reports exactly what it reaped and wakes the queue", async () => {
    const start = await isolatedWindow(2);
    const queue = uniqueQueue("cron");
    const ids = [await enqueueOne(queue, start), await enqueueOne(queue, start), await enqueueOne(queue, start)];
    for (let i = 0; i < ids.length; i++) await leaseOne(queue, start, 10);

    const result = await runTick(env, start + 10_000); // exactly at expiry: an expired lease is void
    expect(result).toMatchObject({ reaped: 3, dead: 0, pruned: 0 });
    expect(result.woken).toContain(queue);
    for (const id of ids) expect(await row(id)).toMatchObject({ state: "pending", attempts: 1, leaseToken: null });
  });

  it("leaves a lease alone until the moment it expires", async () => {
    const start = await isolatedWindow(3);
    const queue = uniqueQueue("cron");
    const id = await enqueueOne(queue, start);
    await leaseOne(queue, start, 60);
    const before = await snapshot(queue);

    expect(await runTick(env, start + 59_999)).toMatchObject({ reaped: 0, dead: 0 });
    expect(await snapshot(queue)).toEqual(before);

    expect(await runTick(env, start + 60_000)).toMatchObject({ reaped: 1, dead: 0 });
    expect(await row(id)).toMatchObject({ state: "pending", leaseToken: null });
  });

  it("repeated expiry backs off further each time, up to backoff_cap_s, and buries the task at max_attempts", async () => {
    const start = await isolatedWindow(4);
    const queue = uniqueQueue("cron");
    const config = await putQueueConfig(
      db(),
      queue,
      { backoff_base_s: 1, backoff_cap_s: 4, max_attempts: 6 },
      start,
      PROCESSORS,
    );
    expect(config).toMatchObject({ backoff_base_s: 1, backoff_cap_s: 4, max_attempts: 6 });
    const id = await enqueueOne(queue, start);
    expect(await row(id)).toMatchObject({ maxAttempts: 6 });

    const delays: number[] = [];
    let leaseAt = start;
    for (let attempt = 1; attempt <= 6; attempt++) {
      const lease = await leaseOne(queue, leaseAt, 1);
      expect(lease).toMatchObject({ id, attempts: attempt });
      const expiresAt = leaseAt + 1000;
      const result = await runTick(env, expiresAt);
      const after = await row(id);
      if (attempt < 6) {
        expect(result).toMatchObject({ reaped: 1, dead: 0 });
        expect(after).toMatchObject({ state: "pending", attempts: attempt, finishedAt: null });
        const delay = after.runAt - expiresAt;
        const bounds = backoffBoundsMs(attempt, 1, 4);
        expect(delay).toBeGreaterThanOrEqual(bounds.min);
        expect(delay).toBeLessThanOrEqual(bounds.max);
        delays.push(delay);
        // Not leasable before its retry time.
        expect(await leaseTasks(db(), { queue, max: 1, visibilityTimeoutS: 1, holder: null }, after.runAt - 1)).toEqual(
          [],
        );
        leaseAt = after.runAt;
      } else {
        expect(result).toMatchObject({ reaped: 1, dead: 1 });
        expect(after).toMatchObject({
          state: "dead",
          attempts: 6,
          finishedAt: expiresAt,
          leaseToken: null,
          runAt: leaseAt,
        });
      }
    }
    // Uncapped, each delay exceeds the previous one; from the third attempt on the 4 s cap holds it.
    expect(delays[1]!).toBeGreaterThan(delays[0]!);
    expect(delays[2]!).toBeGreaterThan(delays[1]!);
    for (const capped of delays.slice(2)) {
      expect(capped).toBeGreaterThanOrEqual(3200);
      expect(capped).toBeLessThanOrEqual(4000);
    }
    const errors = await errorsOf(id);
    expect(errors.map((e) => e.attempt)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(errors.every((e) => e.kind === "lease_expired" && e.message === "lease expired")).toBe(true);

    // Dead is final: a later tick does not touch it.
    const buried = await snapshot(queue);
    expect(await runTick(env, leaseAt + 60_000)).toMatchObject({ reaped: 0, dead: 0 });
    expect(await snapshot(queue)).toEqual(buried);
  });

  it("a processing task whose cancel was requested ends cancelled when its lease expires", async () => {
    const start = await isolatedWindow(5);
    const queue = uniqueQueue("cron");
    const id = await enqueueOne(queue, start, { maxAttempts: 5 });
    await leaseOne(queue, start, 30);
    const requested = await cancelTask(db(), id, start + 1000);
    expect(requested).toMatchObject({ state: "processing", cancelRequested: 1 });

    const result = await runTick(env, start + 31_000);
    expect(result).toMatchObject({ reaped: 1, dead: 0 });
    expect(await row(id)).toMatchObject({
      state: "cancelled",
      finishedAt: start + 31_000,
      leaseToken: null,
      leaseExpiresAt: null,
    });
    expect(await errorsOf(id)).toEqual([
      { attempt: 1, at: start + 30_000, message: "lease expired", kind: "lease_expired" },
    ]);
  });

  it("two overlapping ticks reap each expired task exactly once", async () => {
    const start = await isolatedWindow(6);
    const queue = uniqueQueue("cron");
    const expired: string[] = [];
    for (let i = 0; i < 8; i++) expired.push(await enqueueOne(queue, start));
    for (let i = 0; i < 8; i++) await leaseOne(queue, start, 30);
    const live = await enqueueOne(queue, start);
    // Before the expired ones' backoff is due (start + 40 s), so this lease takes the new task.
    await leaseOne(queue, start + 35_000, 30);
    const liveBefore = await row(live);

    const now = start + 60_000;
    const [a, b] = await Promise.all([runTick(env, now), runTick(env, now)]);
    expect(a.reaped + b.reaped).toBe(expired.length);
    expect(a.dead + b.dead).toBe(0);
    for (const id of expired) {
      expect(await row(id)).toMatchObject({ state: "pending", attempts: 1, updatedAt: now });
      expect(await errorsOf(id)).toEqual([
        { attempt: 1, at: start + 30_000, message: "lease expired", kind: "lease_expired" },
      ]);
    }
    expect(await row(live)).toEqual(liveBefore);
  });
});

describe("cron tick: pruning by retention", () => {
  it("deletes finished tasks past their queue's retention and keeps recent and live ones", async () => {
    const start = await isolatedWindow(10);
    const queue = uniqueQueue("prune");
    const other = uniqueQueue("prune-default");
    await putQueueConfig(db(), queue, { retention_s: 3600 }, start, PROCESSORS);
    const old = start; // ids (ULIDs) and finish times two hours before the tick
    const now = start + 2 * 3600_000;

    // Finished long enough ago: completed, dead, cancelled.
    const completedOld = await enqueueOne(queue, old);
    const leaseC = await leaseOne(queue, old, 600);
    expect(
      (await completeTasks(db(), [{ id: completedOld, leaseToken: leaseC.leaseToken! }], old + 1000))[0],
    ).toMatchObject({ ok: true, state: "completed" });
    const deadOld = await enqueueOne(queue, old);
    const leaseD = await leaseOne(queue, old, 600);
    expect(
      (
        await failTasks(
          db(),
          [{ id: deadOld, leaseToken: leaseD.leaseToken!, message: "no", retryable: false }],
          old + 1000,
        )
      )[0],
    ).toMatchObject({ ok: true, state: "dead" });
    const cancelledOld = await enqueueOne(queue, old);
    expect(await cancelTask(db(), cancelledOld, old + 1000)).toMatchObject({ state: "cancelled" });

    // Created as long ago, but finished within the retention: kept.
    const finishedRecently = await enqueueOne(queue, old);
    const leaseR = await leaseOne(queue, old, 12 * 3600);
    await completeTasks(db(), [{ id: finishedRecently, leaseToken: leaseR.leaseToken! }], now - 1800_000);
    // Live tasks, however old: kept.
    const processingOld = await enqueueOne(queue, old);
    expect((await leaseOne(queue, old + 1, 12 * 3600)).id).toBe(processingOld);
    const pendingOld = await enqueueOne(queue, old);
    // Another queue, finished as long ago but under the default 7-day retention: kept.
    const otherQueueOld = await enqueueOne(other, old);
    const leaseO = await leaseOne(other, old, 600);
    await completeTasks(db(), [{ id: otherQueueOld, leaseToken: leaseO.leaseToken! }], old + 1000);

    const pruned = [completedOld, deadOld, cancelledOld];
    const kept = [finishedRecently, pendingOld, processingOld, otherQueueOld];
    // The prune walks the tasks below the cutoff a window a tick, from where the last tick left it
    // (src/engine/purge.ts): ticks at `now` until it has passed these.
    const ticks = await ticksUntil(now, async () => (await countRows(pruned)) === 0);
    expect(ticks.pruned).toBeGreaterThanOrEqual(pruned.length);
    expect(await countRows(kept)).toBe(kept.length);
    expect(await row(finishedRecently)).toMatchObject({ state: "completed" });
    expect(await row(pendingOld)).toMatchObject({ state: "pending" });

    // The recently finished one goes once it too is past the retention.
    await ticksUntil(now - 1800_000 + 3600_000 + 1, async () => (await countRows([finishedRecently])) === 0);
    expect(await countRows([pendingOld, processingOld, otherQueueOld])).toBe(3);
  });
});

describe("cron tick: waking coordinators", () => {
  it("wakes the coordinator of a queue with due work, which serves its long-poll waiter", async () => {
    const queue = uniqueQueue("wake");
    const stub = env.COORDINATOR.get(env.COORDINATOR.idFromName(queue));
    const waiter = stub.lease({ queue, max: 1, visibilityTimeoutS: 30, holder: "poller", waitMs: 15_000 });
    await untilWaiting(queue, 1);
    // Enqueued straight into D1, with no notification: only the tick can tell the coordinator.
    const id = await enqueueOne(queue, Date.now() - 1000);
    expect(await stub.waiting()).toBe(1);

    const result = await runTick(env, Date.now());
    expect(result.woken).toContain(queue);
    const leased = await waiter;
    expect(leased.map((t) => t.id)).toEqual([id]);
    expect(await row(id)).toMatchObject({
      state: "processing",
      leaseHolder: "poller",
      leaseToken: leased[0]!.leaseToken,
    });
  });

  it("wakes a waiting long-poll whose queue has due work nobody announced (a lost wake-up)", async () => {
    const start = await isolatedWindow(20);
    const queue = uniqueQueue("wake");
    // Due in an hour by the real clock (the coordinator's), so the long poll waits for it.
    const { tasks } = await enqueueTasks(db(), queue, [{ runAt: Date.now() + 3600_000 }], Date.now());
    const id = tasks[0]!.id;
    const stub = env.COORDINATOR.get(env.COORDINATOR.idFromName(queue));
    const waiter = stub.lease({ queue, max: 1, visibilityTimeoutS: 30, holder: "second", waitMs: 15_000 });
    await untilWaiting(queue, 1);
    // Made due behind the coordinator's back: no notify, as if the enqueue's wake-up had been lost.
    await db().run(sql`UPDATE tasks SET run_at = ${start} WHERE id = ${id}`);

    const ctx = createExecutionContext();
    worker.scheduled(createScheduledController({ scheduledTime: start + 60_000, cron: "* * * * *" }), env, ctx);
    await waitOnExecutionContext(ctx);

    const leased = await waiter;
    expect(leased.map((t) => t.id)).toEqual([id]);
    expect(leased[0]).toMatchObject({ attempts: 1, leaseHolder: "second" });
  });
});
