import { expect, it } from "vitest";
import type { NewTask } from "../../src/engine/enqueue";
import { leaseOrder } from "../../src/contracts/lease-order";
import { DEFAULT_QUEUE_CONFIG } from "../../src/engine/queue-config";
import { PROCESSORS, T0, uniqueQueue } from "../helpers";
import { VT_MS, storeFixtures, type StoreFixtures } from "./conformance/fixtures";
import { CORE, CORE_AND_CONFIG, describeStore, itNeeds, OPERATOR } from "./conformance/store-kinds";

/**
 * A mix where each tie-breaker matters: two priorities share run_at values, two tasks share priority and
 * run_at (so only id orders them), and enqueue order differs from lease order.
 */
const MIX: Array<NewTask & { label: string }> = [
  { label: "p0-late", priority: 0, runAt: T0 - 1_000 },
  { label: "p5-late", priority: 5, runAt: T0 - 1_000 },
  { label: "p0-early", priority: 0, runAt: T0 - 5_000 },
  { label: "neg", priority: -2, runAt: T0 - 9_000 },
  { label: "p5-early-a", priority: 5, runAt: T0 - 5_000 },
  { label: "p5-early-b", priority: 5, runAt: T0 - 5_000 },
  { label: "p9", priority: 9, runAt: T0 },
];
const EXPECTED = ["p9", "p5-early-a", "p5-early-b", "p5-late", "p0-early", "p0-late", "neg"];

async function enqueueMix({ enqueueMany }: StoreFixtures, queue: string): Promise<Map<string, string>> {
  const ids = await enqueueMany(queue, MIX); // the engine reads only NewTask's fields
  return new Map(ids.map((id, i) => [id, MIX[i]!.label]));
}

describeStore(
  "lease order",
  (kind) => {
    const fixtures = storeFixtures(kind);
    const { enqueueMany, lease } = fixtures;

    it("is priority DESC, then run_at, then id, one task at a time", async () => {
      const queue = uniqueQueue();
      const labels = await enqueueMix(fixtures, queue);
      const order: string[] = [];
      for (let i = 0; i < MIX.length; i++) {
        const leased = await lease(queue, T0 + i, 1);
        expect(leased).toHaveLength(1);
        order.push(labels.get(leased[0]!.id)!);
      }
      expect(order).toEqual(EXPECTED);
      expect(await lease(queue, T0 + 100)).toEqual([]);
    });

    it("returns a batch lease sorted in the same order", async () => {
      const queue = uniqueQueue();
      const labels = await enqueueMix(fixtures, queue);
      const leased = await lease(queue, T0, 100);
      expect(leased.map((t) => labels.get(t.id))).toEqual(EXPECTED);
      expect([...leased].sort(leaseOrder).map((t) => t.id)).toEqual(leased.map((t) => t.id));
    });

    it("takes the best tasks first when max cuts the batch", async () => {
      const queue = uniqueQueue();
      const labels = await enqueueMix(fixtures, queue);
      const first = await lease(queue, T0, 3);
      expect(first.map((t) => labels.get(t.id))).toEqual(EXPECTED.slice(0, 3));
      const second = await lease(queue, T0, 3);
      expect(second.map((t) => labels.get(t.id))).toEqual(EXPECTED.slice(3, 6));
      const third = await lease(queue, T0, 3);
      expect(third.map((t) => labels.get(t.id))).toEqual(EXPECTED.slice(6));
    });

    it("orders equal priority and run_at by id (creation order)", async () => {
      const queue = uniqueQueue();
      const ids = await enqueueMany(
        queue,
        Array.from({ length: 20 }, () => ({})),
      );
      const leased = await lease(queue, T0, 100);
      expect(leased.map((t) => t.id)).toEqual([...ids].sort());
      expect(leased.map((t) => t.id)).toEqual(ids);
    });
  },
  { needs: CORE },
);

describeStore(
  "lease selection",
  (kind) => {
    const { store, enqueueOne, enqueueMany, lease, row } = storeFixtures(kind);

    it("never leases another queue's tasks", async () => {
      const mine = uniqueQueue();
      const other = uniqueQueue();
      const otherIds = await enqueueMany(other, [{ priority: 100 }, { priority: 100 }]);
      const myId = await enqueueOne(mine, { priority: -100 });
      const leased = await lease(mine, T0, 100);
      expect(leased.map((t) => t.id)).toEqual([myId]);
      for (const id of otherIds) expect((await row(id)).state).toBe("pending");
    });

    itNeeds(kind, ["core", "reads"])(
      "skips tasks whose run_at is in the future, however high their priority",
      async () => {
        const queue = uniqueQueue();
        const [future, due] = await enqueueMany(queue, [
          { priority: 100, runAt: T0 + 1 },
          { priority: 0, runAt: T0 },
        ]);
        expect((await lease(queue, T0, 100)).map((t) => t.id)).toEqual([due]);
        expect((await row(future!)).state).toBe("pending");
        expect(await store().nextRunAt(queue, T0)).toBe(T0 + 1);
        expect((await lease(queue, T0 + 1, 100)).map((t) => t.id)).toEqual([future]);
      },
    );

    it("respects max and leaves the rest pending", async () => {
      const queue = uniqueQueue();
      const ids = await enqueueMany(
        queue,
        Array.from({ length: 10 }, () => ({})),
      );
      const leased = await lease(queue, T0, 4);
      expect(leased.map((t) => t.id)).toEqual(ids.slice(0, 4));
      for (const id of ids.slice(4)) expect((await row(id)).state).toBe("pending");
      expect(await lease(queue, T0, 1)).toHaveLength(1);
    });

    it("leases an expired task again once its backoff is due (no reaper needed), recording the lapsed attempt", async () => {
      const queue = uniqueQueue();
      await enqueueMany(queue, [{}, {}]);
      const first = await lease(queue, T0, 100);
      expect(first).toHaveLength(2);
      expect(await lease(queue, T0 + 1, 100)).toEqual([]);
      // Expired at T0 + VT, backoff after attempt 1 is the queue's base (10 s, no jitter on expiry).
      const due = T0 + VT_MS + 10_000;
      expect(await lease(queue, due - 1, 100)).toEqual([]);
      for (const t of first) expect(await row(t.id)).toMatchObject({ attempts: 1, leaseToken: t.leaseToken });
      const again = await lease(queue, due, 100, "second");
      expect(again.map((t) => t.id).sort()).toEqual(first.map((t) => t.id).sort());
      for (const t of again) {
        expect(t).toMatchObject({
          state: "processing",
          attempts: 2,
          leaseHolder: "second",
          leaseExpiresAt: due + VT_MS,
        });
        expect(first.map((f) => f.leaseToken)).not.toContain(t.leaseToken);
        expect(JSON.parse(t.errors)).toEqual([
          { attempt: 1, at: T0 + VT_MS, message: "lease expired", kind: "lease_expired" },
        ]);
      }
    });

    itNeeds(kind, OPERATOR)(
      "does not lease an expired task whose attempts are used up, nor one whose cancel was requested",
      async () => {
        const queue = uniqueQueue();
        const [last, cancelled] = await enqueueMany(queue, [{ maxAttempts: 1 }, {}]);
        await lease(queue, T0, 100);
        await store().cancelTask(cancelled!, T0 + 1);
        expect(await lease(queue, T0 + 24 * 3600_000, 100)).toEqual([]);
        expect(await row(last!)).toMatchObject({ state: "processing", attempts: 1 });
        expect(await row(cancelled!)).toMatchObject({ state: "processing", cancelRequested: 1 });
      },
    );

    it("marks each leased task processing with a fresh token, attempt and expiry", async () => {
      const queue = uniqueQueue();
      await enqueueMany(queue, [{}, {}, {}]);
      const leased = await lease(queue, T0 + 7, 100, "worker-9");
      expect(new Set(leased.map((t) => t.leaseToken)).size).toBe(3);
      for (const t of leased) {
        expect(await row(t.id)).toMatchObject({
          state: "processing",
          attempts: 1,
          leaseToken: t.leaseToken,
          leaseHolder: "worker-9",
          leaseExpiresAt: T0 + 7 + VT_MS,
          startedAt: T0 + 7,
          updatedAt: T0 + 7,
        });
      }
    });
  },
  { needs: CORE },
);

describeStore(
  "lease length",
  (kind) => {
    const { store, enqueueMany } = storeFixtures(kind);

    it("without a visibility timeout, the lease statement uses the queue's configured one, else the default", async () => {
      const configured = uniqueQueue();
      const unconfigured = uniqueQueue();
      await store().putQueueConfig(configured, { visibility_timeout_s: 120 }, T0, PROCESSORS);
      await enqueueMany(configured, [{}]);
      await enqueueMany(unconfigured, [{}]);
      const [a] = await store().leaseTasks({ queue: configured, max: 1, visibilityTimeoutS: null, holder: null }, T0);
      const [b] = await store().leaseTasks({ queue: unconfigured, max: 1, visibilityTimeoutS: null, holder: null }, T0);
      expect(a!.leaseExpiresAt).toBe(T0 + 120_000);
      expect(b!.leaseExpiresAt).toBe(T0 + DEFAULT_QUEUE_CONFIG.visibility_timeout_s * 1000);
    });
  },
  { needs: CORE_AND_CONFIG },
);
