import { expect, it } from "vitest";
import { uniqueQueue } from "../helpers";
import { storeFixtures } from "./conformance/fixtures";
import { CORE_AND_OPERATOR, describeStore, itNeeds } from "./conformance/store-kinds";

// Bulk actions by filter (src/engine/store-bulk.ts): what a cancel, retry or redrive of the tasks a filter
// matches changes, and what it leaves alone; the cap per call and the answer's `more`. On today's clock: the
// cron tick other files run prunes finished tasks of days ago (test/support/clock-range.ts).
const T0 = Date.now();

describeStore(
  "bulk actions by filter",
  (kind) => {
    const { store, enqueueOne, enqueueMany, leaseOne, completedTask, deadTask, row, snapshot } = storeFixtures(kind);

    it("a cancel ends matching pending tasks, asks matching processing ones to stop, and touches nothing else", async () => {
      const queue = uniqueQueue("bulk-cancel");
      const other = uniqueQueue("bulk-cancel-other");
      // Leased ones first (a lease takes the first due task of the queue).
      const done = await completedTask(queue, { type: "render", group: "g" }, T0);
      const running = await enqueueOne(queue, { type: "render", group: "g" }, T0);
      await leaseOne(queue, T0);
      const [pending, otherType, otherGroup] = await enqueueMany(
        queue,
        [
          { type: "render", group: "g" },
          { type: "mail", group: "g" },
          { type: "render", group: "h" },
        ],
        T0,
      );
      const late = await enqueueOne(queue, { type: "render", group: "g" }, T0 + 10_000);
      const elsewhere = await enqueueOne(other, { type: "render", group: "g" }, T0);
      const filter = { type: "render", group: "g", createdBefore: T0 + 5_000 };

      expect(await store().countForBulk(queue, "cancel", filter, 100)).toBe(2);
      const changed = await store().applyBulk(queue, "cancel", filter, 100, T0 + 20_000);
      expect(changed).toEqual({ count: 2, ids: [pending], more: false, freesFlowKey: false });
      expect(await row(pending!)).toMatchObject({ state: "cancelled", finishedAt: T0 + 20_000 });
      expect(await row(running)).toMatchObject({ state: "processing", cancelRequested: 1 });
      for (const id of [otherType, otherGroup, late]) expect((await row(id!)).state).toBe("pending");
      expect((await row(done)).state).toBe("completed");
      expect((await row(elsewhere)).state).toBe("pending");
      // Asked once: a second call finds nothing left to change.
      expect(await store().applyBulk(queue, "cancel", filter, 100, T0 + 20_001)).toEqual({
        count: 0,
        ids: [],
        more: false,
        freesFlowKey: false,
      });
      const { counts } = await store().queueStats(queue, {}, T0 + 20_002);
      expect(counts.cancelled).toBe(1);
    });

    it("takes at most the cap per call, in id order, and says whether more remain", async () => {
      const queue = uniqueQueue("bulk-cap");
      const ids = await enqueueMany(
        queue,
        Array.from({ length: 5 }, () => ({ type: "t" })),
        T0,
      );
      expect(await store().countForBulk(queue, "cancel", {}, 2)).toBe(3); // counts at most cap + 1
      expect(await store().countForBulk(queue, "cancel", {}, 10)).toBe(5);
      const first = await store().applyBulk(queue, "cancel", {}, 2, T0 + 1);
      expect(first).toEqual({ count: 2, ids: ids.slice(0, 2), more: true, freesFlowKey: false });
      const second = await store().applyBulk(queue, "cancel", {}, 2, T0 + 2);
      expect(second).toEqual({ count: 2, ids: ids.slice(2, 4), more: true, freesFlowKey: false });
      const third = await store().applyBulk(queue, "cancel", {}, 2, T0 + 3);
      expect(third).toEqual({ count: 1, ids: ids.slice(4), more: false, freesFlowKey: false });
    });

    it("a retry revives dead and cancelled tasks; a redrive the dead only; a held dedupe key is skipped", async () => {
      const queue = uniqueQueue("bulk-revive");
      const dead = await deadTask(queue, { type: "t" }, T0);
      const heldDead = await deadTask(queue, { type: "t", dedupeKey: "k" }, T0);
      const otherType = await deadTask(queue, { type: "u" }, T0);
      const cancelled = await enqueueOne(queue, { type: "t" }, T0);
      await store().cancelTask(cancelled, T0 + 1);
      const holder = await enqueueOne(queue, { type: "t", dedupeKey: "k" }, T0); // live, holds "k"

      expect(await store().countForBulk(queue, "redrive", { type: "t" }, 100)).toBe(1);
      expect(await store().applyBulk(queue, "redrive", { type: "t" }, 100, T0 + 5)).toEqual({
        count: 1,
        ids: [dead],
        more: false,
        freesFlowKey: false,
      });
      expect(await row(dead)).toMatchObject({ state: "pending", attempts: 0, runAt: T0 + 5, finishedAt: null });
      expect((await row(cancelled)).state).toBe("cancelled");

      const retried = await store().applyBulk(queue, "retry", { type: "t" }, 100, T0 + 6);
      expect(retried).toEqual({ count: 1, ids: [cancelled], more: false, freesFlowKey: false });
      expect((await row(heldDead)).state).toBe("dead");
      expect((await row(holder)).state).toBe("pending");
      expect((await row(otherType)).state).toBe("dead");
      // The state filter narrows within the action's states.
      expect(await store().countForBulk(queue, "retry", { state: "dead" }, 100)).toBe(1); // otherType; heldDead skipped
    });

    // Enqueues with a flow-control `key`, which the pack store refuses (no flow control: its tasks hold no key,
    // so a key filter matches none of them, test/engine/packs/handout-purge-bulk.test.ts).
    itNeeds(kind, "all")(
      "a cancel says when a task it ended may have held its flow key (keyed, and started: a waiting retry)",
      async () => {
        for (const cancel of [
          (queue: string) => store().applyBulk(queue, "cancel", {}, 100, T0 + 2),
          (queue: string) => store().cancelQueueTasks(queue, {}, T0 + 2),
        ]) {
          const queue = uniqueQueue("bulk-frees");
          const id = await enqueueOne(queue, { key: "k" }, T0);
          const leased = await leaseOne(queue, T0);
          const [failed] = await store().failTasks(
            [{ id, leaseToken: leased.leaseToken, message: "later", retryable: true, retryAfterS: 600 }],
            T0 + 1,
          );
          expect(failed).toMatchObject({ ok: true, state: "pending" });
          expect(await cancel(queue)).toMatchObject({ ids: [id], freesFlowKey: true });
          // Fresh keyed tasks hold nothing.
          const fresh = uniqueQueue("bulk-frees");
          await enqueueMany(fresh, [{ key: "k" }, { key: "k" }], T0);
          expect(await store().applyBulk(fresh, "cancel", {}, 100, T0 + 2)).toMatchObject({ freesFlowKey: false });
        }
      },
    );

    // Enqueues with a flow-control `key`, which the pack store refuses (no flow control: its tasks hold no key,
    // so a key filter matches none of them, test/engine/packs/handout-purge-bulk.test.ts).
    itNeeds(kind, "all")("filters by flow-control key", async () => {
      const queue = uniqueQueue("bulk-key");
      const [a1, b1, a2] = await enqueueMany(
        queue,
        [{ key: "tenant-a" }, { key: "tenant-b" }, { key: "tenant-a" }],
        T0,
      );
      expect(await store().applyBulk(queue, "cancel", { key: "tenant-a" }, 100, T0 + 1)).toEqual({
        count: 2,
        ids: [a1, a2],
        more: false,
        freesFlowKey: false,
      });
      expect((await row(b1!)).state).toBe("pending");
    });

    it("a dry run's count changes nothing", async () => {
      const queue = uniqueQueue("bulk-dry");
      // The dead task first: deadTask leases the queue's first task, which must be its own.
      await deadTask(queue, { type: "a" }, T0);
      await enqueueMany(queue, [{ type: "a" }, { type: "a" }], T0);
      const before = await snapshot(queue);
      expect(await store().countForBulk(queue, "cancel", { type: "a" }, 100)).toBe(2);
      expect(await store().countForBulk(queue, "redrive", { type: "a" }, 100)).toBe(1);
      expect(await snapshot(queue)).toEqual(before);
    });
  },
  { needs: [...CORE_AND_OPERATOR, "bulk"] },
);
