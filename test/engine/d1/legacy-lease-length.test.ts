import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { db, PROCESSORS, T0, uniqueQueue } from "../../helpers";
import { storeFixtures } from "../conformance/fixtures";
import { D1_STORE } from "../conformance/store-kinds";

// D1 store only: a row leased before `lease_visibility_s` existed (the column NULL, as the migration left
// it) — a state of this store's own history, written here by hand.

const { store, enqueueOne, row } = storeFixtures(D1_STORE);

/** Leases the queue's one task for `visibilityTimeoutS` at T0. */
async function leaseFor(queue: string, visibilityTimeoutS: number) {
  const [task] = await store().leaseTasks({ queue, max: 1, visibilityTimeoutS, holder: "w" }, T0);
  expect(task).toBeDefined();
  return { id: task!.id, leaseToken: task!.leaseToken! };
}

describe("a lease from before its length was stored, on D1", () => {
  it("a lease from before the length was stored falls back to the queue's visibility timeout", async () => {
    const queue = uniqueQueue("length");
    await store().putQueueConfig(queue, { visibility_timeout_s: 90 }, T0, PROCESSORS);
    await enqueueOne(queue);
    const lease = await leaseFor(queue, 600);
    // As a row leased by the previous release looks after the migration: no length recorded.
    await db().run(sql`UPDATE tasks SET lease_visibility_s = NULL WHERE id = ${lease.id}`);
    await store().heartbeatTask(lease, T0 + 1_000);
    expect((await row(lease.id)).leaseExpiresAt).toBe(T0 + 1_000 + 90_000);
    const [extended] = await store().extendLeases([lease], T0 + 2_000);
    expect(extended).toMatchObject({ ok: true, lease_expires_at: T0 + 2_000 + 90_000 });
  });
});
