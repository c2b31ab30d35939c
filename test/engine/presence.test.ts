import { expect, it } from "vitest";
import { PROCESSORS, T0, uniqueQueue } from "../helpers";
import { storeFixtures } from "./conformance/fixtures";
import type { StoreGroup } from "../../src/engine/packs/pack-store";
import { describeStore } from "./conformance/store-kinds";

const TO = { shard: "DB_1", slot: 7 };

/** What the presence properties call: the reads, and a config, a cancel and a take-out to set them up. */
const PRESENCE: readonly StoreGroup[] = ["core", "queueConfig", "operator", "presence", "transit"];

describeStore(
  "what a database holds of a queue",
  (kind) => {
    const { store, enqueueOne, enqueueMany, leaseOne, completedTask, deadTask } = storeFixtures(kind);

    it("hasQueueData: a stored config, or any task, live or finished", async () => {
      const [none, configured, live, finished] = [1, 2, 3, 4].map(() => uniqueQueue("data"));
      await store().putQueueConfig(configured!, { max_attempts: 3 }, T0, PROCESSORS);
      await enqueueOne(live!);
      await completedTask(finished!);
      expect(await store().hasQueueData(none!)).toBe(false);
      expect(await store().hasQueueData(configured!)).toBe(true);
      expect(await store().hasQueueData(live!)).toBe(true);
      expect(await store().hasQueueData(finished!)).toBe(true);
    });

    it("findQueuesWithLiveTasks: only the queues asked about that have a pending or processing task", async () => {
      const [pending, processing, finished, none] = [1, 2, 3, 4].map(() => uniqueQueue("live"));
      await enqueueOne(pending!);
      await enqueueOne(processing!);
      await leaseOne(processing!, T0);
      await deadTask(finished!);
      const found = await store().findQueuesWithLiveTasks([pending!, processing!, finished!, none!]);
      expect(found.sort()).toEqual([pending!, processing!].sort());
      expect(await store().findQueuesWithLiveTasks([])).toEqual([]);
    });

    it("countQueueTasksHeld and findTaskIdsHeld: tasks in any state, and those in transit out", async () => {
      const queue = uniqueQueue("held");
      const done = await completedTask(queue);
      const [moving, staying] = await enqueueMany(queue, [{ payload: 1 }, { payload: 2 }], T0 + 10);
      expect(await store().countQueueTasksHeld(queue)).toBe(3);
      await store().takeOutForTransit({ queue, partition: { slot: TO.slot, idGlob: moving! } }, TO, 200, T0 + 20);
      expect(await store().countQueueTasksHeld(queue)).toBe(3);
      const unknown = "01JZZZZZZZZZZZZZZZZZZZZZZZ";
      expect((await store().findTaskIdsHeld([done, moving!, staying!, unknown])).sort()).toEqual(
        [done, moving!, staying!].sort(),
      );
      await store().clearTransit([moving!]);
      expect(await store().countQueueTasksHeld(queue)).toBe(2);
      expect(await store().findTaskIdsHeld([moving!])).toEqual([]);
      expect(await store().countQueueTasksHeld(uniqueQueue("held-none"))).toBe(0);
    });
  },
  { needs: PRESENCE },
);

describeStore(
  "which queues are in use (the SQS endpoint's queues)",
  (kind) => {
    const { store, enqueueOne, leaseOne, completedTask } = storeFixtures(kind);

    it("counts a stored config or a live task no cancel is pending for; not finished tasks, not a cancel requested", async () => {
      const [configured, live, finished, stopping] = [1, 2, 3, 4].map(() => uniqueQueue("in-use"));
      await store().putQueueConfig(configured!, {}, T0, PROCESSORS);
      await enqueueOne(live!);
      await completedTask(finished!);
      const held = await enqueueOne(stopping!);
      await leaseOne(stopping!, T0);
      expect(await store().hasUncancelledLiveTask(stopping!)).toBe(true);
      expect((await store().cancelTask(held, T0 + 1)).cancelRequested).toBe(1);

      expect(await store().hasUncancelledLiveTask(live!)).toBe(true);
      expect(await store().hasUncancelledLiveTask(configured!)).toBe(false);
      expect(await store().hasUncancelledLiveTask(finished!)).toBe(false);
      expect(await store().hasUncancelledLiveTask(stopping!)).toBe(false);
      const names = await store().listQueueNamesInUse();
      expect(names.filter((n) => [configured, live, finished, stopping].includes(n)).sort()).toEqual(
        [configured!, live!].sort(),
      );
      expect(new Set(names).size).toBe(names.length);
    });
  },
  { needs: PRESENCE },
);

describeStore(
  "reads of single tasks and live counts",
  (kind) => {
    const { store, enqueueOne, enqueueMany, leaseOne, completedTask, deadTask } = storeFixtures(kind);

    it("findTaskState: the state, or null for no such task", async () => {
      expect(await store().findTaskState(await enqueueOne(uniqueQueue("state")))).toBe("pending");
      expect(await store().findTaskState(await deadTask(uniqueQueue("state")))).toBe("dead");
      expect(await store().findTaskState("01JZZZZZZZZZZZZZZZZZZZZZZY")).toBeNull();
    });

    it("readTaskEventFields: what an event shows of each task held, as it is now", async () => {
      const queue = uniqueQueue("event-fields");
      const [a] = await enqueueMany(queue, [{ type: "mail", group: "g1" }]);
      const leased = await leaseOne(queue, T0 + 5);
      const rows = await store().readTaskEventFields([a!, "01JZZZZZZZZZZZZZZZZZZZZZZX"]);
      expect(rows).toEqual([
        {
          id: a,
          type: "mail",
          group_key: "g1",
          state: "processing",
          attempts: 1,
          run_at: leased.runAt,
          errors: "[]",
          progress: null,
          progress_message: null,
        },
      ]);
    });

    it("countLiveTasks: due and not-yet-due pending tasks, and processing ones, at `now`", async () => {
      const queue = uniqueQueue("live-counts");
      await completedTask(queue, {}, T0);
      await enqueueMany(queue, [{}, {}, { runAt: T0 + 60_000 }], T0 + 1);
      await leaseOne(queue, T0 + 2);
      expect(await store().countLiveTasks(queue, T0 + 10)).toEqual({ due: 1, notDue: 1, processing: 1 });
      expect(await store().countLiveTasks(queue, T0 + 60_000)).toEqual({ due: 2, notDue: 0, processing: 1 });
      expect(await store().countLiveTasks(uniqueQueue("live-none"), T0)).toEqual({ due: 0, notDue: 0, processing: 0 });
    });
  },
  { needs: ["core", "reads"] },
);
