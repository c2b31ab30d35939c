import { expect, it } from "vitest";
import { DEFAULT_QUEUE_CONFIG } from "../../src/engine/queue-config";
import type { TaskStore } from "../../src/engine/store";
import { PROCESSORS, T0, uniqueQueue } from "../helpers";
import { storeFixtures } from "./conformance/fixtures";
import { CORE_AND_CONFIG, describeStore } from "./conformance/store-kinds";

/** Leases the queue's one task for `visibilityTimeoutS` (null: the queue's) at `now`. */
async function leaseFor(store: TaskStore, queue: string, visibilityTimeoutS: number | null, now = T0) {
  const [task] = await store.leaseTasks({ queue, max: 1, visibilityTimeoutS, holder: "w" }, now);
  expect(task).toBeDefined();
  return { id: task!.id, leaseToken: task!.leaseToken! };
}

describeStore(
  "a lease keeps its own length when a heartbeat or extend names none",
  (kind) => {
    const { store, enqueueOne, row } = storeFixtures(kind);

    it("a heartbeat with progress and no duration extends a 600 s lease by 600 s, not the queue's 30 s", async () => {
      const queue = uniqueQueue("length");
      await enqueueOne(queue);
      expect(DEFAULT_QUEUE_CONFIG.visibility_timeout_s).toBe(30);
      const lease = await leaseFor(store(), queue, 600);
      expect(await row(lease.id)).toMatchObject({ leaseExpiresAt: T0 + 600_000, leaseVisibilityS: 600 });

      const beat = await store().heartbeatTask({ ...lease, progress: 40, progressMessage: "2/5" }, T0 + 1_000);
      expect(beat).toMatchObject({ leaseExpiresAt: T0 + 1_000 + 600_000, progress: 40 });
      // A named duration is a one-off: the next heartbeat without one is back to the lease's own 600 s.
      await store().heartbeatTask({ ...lease, extendS: 5 }, T0 + 2_000);
      expect((await row(lease.id)).leaseExpiresAt).toBe(T0 + 2_000 + 5_000);
      await store().heartbeatTask(lease, T0 + 3_000);
      expect((await row(lease.id)).leaseExpiresAt).toBe(T0 + 3_000 + 600_000);
    });

    it("a lease that named no length keeps the queue's timeout as it was at the lease, not a later change", async () => {
      const queue = uniqueQueue("length");
      await store().putQueueConfig(queue, { visibility_timeout_s: 120 }, T0, PROCESSORS);
      await enqueueOne(queue);
      const lease = await leaseFor(store(), queue, null);
      expect(await row(lease.id)).toMatchObject({ leaseExpiresAt: T0 + 120_000, leaseVisibilityS: 120 });
      await store().putQueueConfig(queue, { visibility_timeout_s: 45 }, T0 + 1, PROCESSORS);
      await store().heartbeatTask(lease, T0 + 10_000);
      expect((await row(lease.id)).leaseExpiresAt).toBe(T0 + 10_000 + 120_000);
    });

    it("extend without a length uses each lease's own; with one, that length", async () => {
      const queue = uniqueQueue("length");
      await enqueueOne(queue, { priority: 2 });
      await enqueueOne(queue, { priority: 1 });
      const long = await leaseFor(store(), queue, 600);
      const short = await leaseFor(store(), queue, 60);
      const outcomes = await store().extendLeases([long, short, { ...short, visibilityTimeoutS: 7 }], T0 + 5_000);
      // The repeated id is refused; the first two kept their own lengths.
      expect(outcomes.map((o) => (o.ok ? o.lease_expires_at : o.error.code))).toEqual([
        T0 + 5_000 + 600_000,
        T0 + 5_000 + 60_000,
        "invalid_request",
      ]);
      const [named] = await store().extendLeases([{ ...short, visibilityTimeoutS: 7 }], T0 + 6_000);
      expect(named).toMatchObject({ ok: true, lease_expires_at: T0 + 6_000 + 7_000 });
    });
  },
  { needs: CORE_AND_CONFIG },
);
