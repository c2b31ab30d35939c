import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { extendLeases } from "../../src/engine/extend";
import { heartbeatTask } from "../../src/engine/heartbeat";
import { leaseTasks } from "../../src/engine/lease";
import { DEFAULT_QUEUE_CONFIG, putQueueConfig } from "../../src/engine/queue-config";
import { db, PROCESSORS, row, T0, uniqueQueue } from "../helpers";
import { enqueueOne } from "./fixtures";

/** Leases the queue's one task for `visibilityTimeoutS` (null: the queue's) at `now`. */
async function leaseFor(queue: string, visibilityTimeoutS: number | null, now = T0) {
  const [task] = await leaseTasks(db(), { queue, max: 1, visibilityTimeoutS, holder: "w" }, now);
  expect(task).toBeDefined();
  return { id: task!.id, leaseToken: task!.leaseToken! };
}

describe("a lease keeps its own length when a heartbeat or extend names none", () => {
  it("a heartbeat with progress and no duration extends a 600 s lease by 600 s, not the queue's 30 s", async () => {
    const queue = uniqueQueue("length");
    await enqueueOne(queue);
    expect(DEFAULT_QUEUE_CONFIG.visibility_timeout_s).toBe(30);
    const lease = await leaseFor(queue, 600);
    expect(await row(lease.id)).toMatchObject({ leaseExpiresAt: T0 + 600_000, leaseVisibilityS: 600 });

    const beat = await heartbeatTask(db(), { ...lease, progress: 40, progressMessage: "2/5" }, T0 + 1_000);
    expect(beat).toMatchObject({ leaseExpiresAt: T0 + 1_000 + 600_000, progress: 40 });
    // A named duration is a one-off: the next heartbeat without one is back to the lease's own 600 s.
    await heartbeatTask(db(), { ...lease, extendS: 5 }, T0 + 2_000);
    expect((await row(lease.id)).leaseExpiresAt).toBe(T0 + 2_000 + 5_000);
    await heartbeatTask(db(), lease, T0 + 3_000);
    expect((await row(lease.id)).leaseExpiresAt).toBe(T0 + 3_000 + 600_000);
  });

  it("a lease that named no length keeps the queue's timeout as it was at the lease, not a later change", async () => {
    const queue = uniqueQueue("length");
    await putQueueConfig(db(), queue, { visibility_timeout_s: 120 }, T0, PROCESSORS);
    await enqueueOne(queue);
    const lease = await leaseFor(queue, null);
    expect(await row(lease.id)).toMatchObject({ leaseExpiresAt: T0 + 120_000, leaseVisibilityS: 120 });
    await putQueueConfig(db(), queue, { visibility_timeout_s: 45 }, T0 + 1, PROCESSORS);
    await heartbeatTask(db(), lease, T0 + 10_000);
    expect((await row(lease.id)).leaseExpiresAt).toBe(T0 + 10_000 + 120_000);
  });

  it("extend without a length uses each lease's own; with one, that length", async () => {
    const queue = uniqueQueue("length");
    await enqueueOne(queue, { priority: 2 });
    await enqueueOne(queue, { priority: 1 });
    const long = await leaseFor(queue, 600);
    const short = await leaseFor(queue, 60);
    const outcomes = await extendLeases(db(), [long, short, { ...short, visibilityTimeoutS: 7 }], T0 + 5_000);
    // The repeated id is refused; the first two kept their own lengths.
    expect(outcomes.map((o) => (o.ok ? o.lease_expires_at : o.error.code))).toEqual([
      T0 + 5_000 + 600_000,
      T0 + 5_000 + 60_000,
      "invalid_request",
    ]);
    const [named] = await extendLeases(db(), [{ ...short, visibilityTimeoutS: 7 }], T0 + 6_000);
    expect(named).toMatchObject({ ok: true, lease_expires_at: T0 + 6_000 + 7_000 });
  });

  it("a lease from before the length was stored falls back to the queue's visibility timeout", async () => {
    const queue = uniqueQueue("length");
    await putQueueConfig(db(), queue, { visibility_timeout_s: 90 }, T0, PROCESSORS);
    await enqueueOne(queue);
    const lease = await leaseFor(queue, 600);
    // As a row leased by the previous release looks after the migration: no length recorded.
    await db().run(sql`UPDATE tasks SET lease_visibility_s = NULL WHERE id = ${lease.id}`);
    await heartbeatTask(db(), lease, T0 + 1_000);
    expect((await row(lease.id)).leaseExpiresAt).toBe(T0 + 1_000 + 90_000);
    const [extended] = await extendLeases(db(), [lease], T0 + 2_000);
    expect(extended).toMatchObject({ ok: true, lease_expires_at: T0 + 2_000 + 90_000 });
  });
});
