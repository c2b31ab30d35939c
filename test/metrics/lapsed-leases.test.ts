import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { completeTasks } from "../../src/engine/complete";
import { sumCounters } from "../../src/engine/counters";
import { enqueueTasks } from "../../src/engine/enqueue";
import { leaseAnswers, leaseTasks } from "../../src/engine/lease";
import { reapExpiredLeases } from "../../src/engine/reap";
import { evaluateHealth } from "../../src/health/check-health";
import { db, T0, taskDb, uniqueQueue } from "../helpers";
import { call, enqueueOne, lease } from "../http/api";

/** The queue's counters, all time. */
async function counts(queue: string) {
  const [row] = await sumCounters(db(), { queue });
  return { leased: row?.leased ?? 0, failed: row?.failed ?? 0, completed: row?.completed ?? 0, dead: row?.dead ?? 0 };
}

/** Leases with a 1 s visibility timeout at `now`. */
const leaseAt = (queue: string, now: number) =>
  leaseTasks(db(), { queue, max: 10, visibilityTimeoutS: 1, holder: "w" }, now);

/** When a lease taken at T0 for 1 s may be taken over: its expiry plus the first attempt's backoff (10 s). */
const TAKEOVER = T0 + 1_000 + 10_000;

describe("a lapsed lease is counted as a failed attempt once, whoever notices it first", () => {
  it("taken over by the next lease: failed counted, in health's failure rate too", async () => {
    const queue = uniqueQueue("lapse");
    // Ten tasks: health judges a failure rate from 10 outcomes on (failure_rate_min_outcomes).
    await enqueueTasks(
      db(),
      queue,
      Array.from({ length: 10 }, () => ({})),
      T0,
    );
    const first = await leaseAt(queue, T0);
    const second = await leaseAt(queue, TAKEOVER);
    expect(second.map((t) => t.id).sort()).toEqual(first.map((t) => t.id).sort());
    expect(second.every((t) => t.attempts === 2 && t.leaseTookOverExpired === 1)).toBe(true);
    expect(await counts(queue)).toEqual({ leased: 20, failed: 10, completed: 0, dead: 0 });

    // The reaper, a moment later, finds none of those attempts left to end: still ten failures. (The
    // second leases are live until TAKEOVER + 1 s.)
    await reapExpiredLeases(db(), TAKEOVER + 500);
    expect((await counts(queue)).failed).toBe(10);

    await completeTasks(
      db(),
      second.map((t) => ({ id: t.id, leaseToken: t.leaseToken! })),
      TAKEOVER + 600,
    );
    expect(await counts(queue)).toEqual({ leased: 20, failed: 10, completed: 10, dead: 0 });
    const [health] = await evaluateHealth(db(), TAKEOVER + 1_000, { queue });
    expect(health!.figures).toMatchObject({ failure_rate_5m: 0.5, outcomes_5m: 20 });
  });

  it("taken over by a lease answered as the API renders it (leaseAnswers): counted the same", async () => {
    const queue = uniqueQueue("lapse");
    await enqueueTasks(db(), queue, [{}, {}], T0);
    await leaseAt(queue, T0);
    const answers = await leaseAnswers(db(), { queue, max: 10, visibilityTimeoutS: 30, holder: "w" }, TAKEOVER);
    expect(answers.map((a) => a.leaseTookOverExpired)).toEqual([1, 1]);
    expect(await counts(queue)).toMatchObject({ leased: 4, failed: 2 });
  });

  it("ended by the reaper first: counted by the reaper, and the lease that follows counts no second failure", async () => {
    const queue = uniqueQueue("lapse");
    await enqueueTasks(db(), queue, [{}], T0);
    await leaseAt(queue, T0);
    const { reaped } = await reapExpiredLeases(db(), T0 + 2_000);
    expect(reaped.filter((r) => r.queue === queue)).toEqual([expect.objectContaining({ state: "pending" })]);
    expect(await counts(queue)).toMatchObject({ leased: 1, failed: 1 });
    const [again] = await leaseAt(queue, TAKEOVER);
    expect(again).toMatchObject({ attempts: 2, leaseTookOverExpired: 0 });
    expect(await counts(queue)).toMatchObject({ leased: 2, failed: 1 });
  });

  it("a fresh lease and an unclaimed provisional lease taken over count no failure", async () => {
    const queue = uniqueQueue("lapse");
    await enqueueTasks(db(), queue, [{}], T0);
    const [provisional] = await leaseTasks(
      db(),
      { queue, max: 1, visibilityTimeoutS: 30, holder: "poll", provisional: true },
      T0,
    );
    expect(provisional).toMatchObject({ leaseTookOverExpired: 0 });
    // Unclaimed past its claim window (10 s): taken over at once, the attempt refunded, nothing failed.
    const [taken] = await leaseAt(queue, T0 + 11_000);
    expect(taken).toMatchObject({ id: provisional!.id, attempts: 1, leaseTookOverExpired: 0 });
    expect(await counts(queue)).toMatchObject({ leased: 2, failed: 0 });
  });
});

describe("through the API", () => {
  it("a lease that takes over a crashed worker's task shows the lapsed attempt in /metrics and health", async () => {
    const queue = uniqueQueue("lapse");
    const id = await enqueueOne(queue);
    const [crashed] = await lease(queue, { max: 1 });
    expect(crashed!.id).toBe(id);
    // The worker died a minute ago: its lease expired and the backoff (10 s) is over.
    await (await taskDb(id)).run(sql`UPDATE tasks SET lease_expires_at = ${Date.now() - 60_000} WHERE id = ${id}`);
    const [next] = await lease(queue, { max: 1 });
    expect(next).toMatchObject({ id, attempts: 2, errors: [expect.objectContaining({ kind: "lease_expired" })] });

    const metrics = await call("GET", "/metrics");
    expect(metrics.text).toContain(`edgeq_tasks_failed_total{queue="${queue}",type="default"} 1`);
    const health = await call<{ figures: Record<string, number> }>("GET", `/v1/queues/${queue}/health`);
    expect(health.status, health.text).toBe(200);
    // Outcomes are completions + failed attempts: the lapsed attempt is the one outcome so far.
    expect(health.body.figures).toMatchObject({ outcomes_5m: 1 });
  });
});
