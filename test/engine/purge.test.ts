import { expect, it } from "vitest";
import { T0, uniqueQueue } from "../helpers";
import { storeFixtures } from "./conformance/fixtures";
import { CORE_AND_OPERATOR, describeStore } from "./conformance/store-kinds";

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

describeStore(
  "purgeTasks",
  (kind) => {
    const { store, enqueueOne, leaseOne, completedTask, deadTask } = storeFixtures(kind);

    /** Whether the store holds the task. */
    const exists = async (id: string) => (await store().findTaskState(id)) !== null;

    it("deletes finished tasks finished before `before`, keeping live and newer ones", async () => {
      const queue = uniqueQueue();
      const completed = await completedTask(queue); // finished T0 + 1
      const dead = await deadTask(queue, {}, T0 + 10); // finished T0 + 11
      const cancelled = await enqueueOne(queue, {}, T0 + 20);
      await store().cancelTask(cancelled, T0 + 21);
      const newer = await completedTask(queue, {}, T0 + 5_000); // finished T0 + 5_001
      const pending = await enqueueOne(queue, { runAt: T0 + DAY_MS }, T0 + 30);
      const processing = await enqueueOne(queue, {}, T0 + 40);
      expect((await leaseOne(queue, T0 + 40)).id).toBe(processing);
      const otherQueueDone = await completedTask(uniqueQueue());

      const { purged } = await store().purgeTasks(queue, { before: T0 + 5_001 });
      expect(purged).toBe(3);
      expect(await exists(completed)).toBe(false);
      expect(await exists(dead)).toBe(false);
      expect(await exists(cancelled)).toBe(false);
      // finished_at must be strictly before `before`.
      expect(await exists(newer)).toBe(true);
      expect(await exists(pending)).toBe(true);
      expect(await exists(processing)).toBe(true);
      expect(await exists(otherQueueDone)).toBe(true);

      // Live tasks survive any cutoff.
      await store().purgeTasks(queue, { before: T0 + 365 * DAY_MS });
      expect(await exists(newer)).toBe(false);
      expect(await exists(pending)).toBe(true);
      expect(await exists(processing)).toBe(true);
    });

    it("deletes only the given states, and at most `limit`", async () => {
      const queue = uniqueQueue();
      const dead = await deadTask(queue);
      const done1 = await completedTask(queue, {}, T0 + 10);
      const done2 = await completedTask(queue, {}, T0 + 20);
      expect(await store().purgeTasks(queue, { before: T0 + HOUR_MS, states: ["dead"] })).toEqual({ purged: 1 });
      expect(await exists(dead)).toBe(false);
      expect(await store().purgeTasks(queue, { before: T0 + HOUR_MS, limit: 1 })).toEqual({ purged: 1 });
      expect([await exists(done1), await exists(done2)].filter(Boolean)).toHaveLength(1);
    });
  },
  { needs: [...CORE_AND_OPERATOR, "purge"] },
);
