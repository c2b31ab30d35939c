import { describe, expect, it } from "vitest";
import { cancelTask } from "../../src/engine/cancel";
import { countLiveTasks } from "../../src/engine/live-figures";
import {
  countQueueTasksHeld,
  findQueuesWithLiveTasks,
  findTaskIdsHeld,
  hasQueueData,
  hasUncancelledLiveTask,
  listQueueNamesInUse,
} from "../../src/engine/presence";
import { putQueueConfig } from "../../src/engine/queue-config";
import { findTaskState, readTaskEventFields } from "../../src/engine/read";
import { clearTransit, takeOutForTransit } from "../../src/engine/transit";
import { PROCESSORS, T0, db, uniqueQueue } from "../helpers";
import { completedTask, deadTask, enqueueMany, enqueueOne, leaseOne } from "./fixtures";

const TO = { shard: "DB_1", slot: 7 };

describe("what a database holds of a queue", () => {
  it("hasQueueData: a stored config, or any task, live or finished", async () => {
    const [none, configured, live, finished] = [1, 2, 3, 4].map(() => uniqueQueue("data"));
    await putQueueConfig(db(), configured!, { max_attempts: 3 }, T0, PROCESSORS);
    await enqueueOne(live!);
    await completedTask(finished!);
    expect(await hasQueueData(db(), none!)).toBe(false);
    expect(await hasQueueData(db(), configured!)).toBe(true);
    expect(await hasQueueData(db(), live!)).toBe(true);
    expect(await hasQueueData(db(), finished!)).toBe(true);
  });

  it("findQueuesWithLiveTasks: only the queues asked about that have a pending or processing task", async () => {
    const [pending, processing, finished, none] = [1, 2, 3, 4].map(() => uniqueQueue("live"));
    await enqueueOne(pending!);
    await enqueueOne(processing!);
    await leaseOne(processing!, T0);
    await deadTask(finished!);
    const found = await findQueuesWithLiveTasks(db(), [pending!, processing!, finished!, none!]);
    expect(found.sort()).toEqual([pending!, processing!].sort());
    expect(await findQueuesWithLiveTasks(db(), [])).toEqual([]);
  });

  it("countQueueTasksHeld and findTaskIdsHeld: tasks in any state, and those in transit out", async () => {
    const queue = uniqueQueue("held");
    const done = await completedTask(queue);
    const [moving, staying] = await enqueueMany(queue, [{ payload: 1 }, { payload: 2 }], T0 + 10);
    expect(await countQueueTasksHeld(db(), queue)).toBe(3);
    await takeOutForTransit(db(), { queue, partition: { slot: TO.slot, idGlob: moving! } }, TO, 200, T0 + 20);
    expect(await countQueueTasksHeld(db(), queue)).toBe(3);
    const unknown = "01JZZZZZZZZZZZZZZZZZZZZZZZ";
    expect((await findTaskIdsHeld(db(), [done, moving!, staying!, unknown])).sort()).toEqual(
      [done, moving!, staying!].sort(),
    );
    await clearTransit(db(), [moving!]);
    expect(await countQueueTasksHeld(db(), queue)).toBe(2);
    expect(await findTaskIdsHeld(db(), [moving!])).toEqual([]);
    expect(await countQueueTasksHeld(db(), uniqueQueue("held-none"))).toBe(0);
  });
});

describe("which queues are in use (the SQS endpoint's queues)", () => {
  it("counts a stored config or a live task no cancel is pending for; not finished tasks, not a cancel requested", async () => {
    const [configured, live, finished, stopping] = [1, 2, 3, 4].map(() => uniqueQueue("in-use"));
    await putQueueConfig(db(), configured!, {}, T0, PROCESSORS);
    await enqueueOne(live!);
    await completedTask(finished!);
    const held = await enqueueOne(stopping!);
    await leaseOne(stopping!, T0);
    expect(await hasUncancelledLiveTask(db(), stopping!)).toBe(true);
    expect((await cancelTask(db(), held, T0 + 1)).cancelRequested).toBe(1);

    expect(await hasUncancelledLiveTask(db(), live!)).toBe(true);
    expect(await hasUncancelledLiveTask(db(), configured!)).toBe(false);
    expect(await hasUncancelledLiveTask(db(), finished!)).toBe(false);
    expect(await hasUncancelledLiveTask(db(), stopping!)).toBe(false);
    const names = await listQueueNamesInUse(db());
    expect(names.filter((n) => [configured, live, finished, stopping].includes(n)).sort()).toEqual(
      [configured!, live!].sort(),
    );
    expect(new Set(names).size).toBe(names.length);
  });
});

describe("reads of single tasks and live counts", () => {
  it("findTaskState: the state, or null for no such task", async () => {
    expect(await findTaskState(db(), await enqueueOne(uniqueQueue("state")))).toBe("pending");
    expect(await findTaskState(db(), await deadTask(uniqueQueue("state")))).toBe("dead");
    expect(await findTaskState(db(), "01JZZZZZZZZZZZZZZZZZZZZZZY")).toBeNull();
  });

  it("readTaskEventFields: what an event shows of each task held, as it is now", async () => {
    const queue = uniqueQueue("event-fields");
    const [a] = await enqueueMany(queue, [{ type: "mail", group: "g1" }]);
    const leased = await leaseOne(queue, T0 + 5);
    const rows = await readTaskEventFields(db(), [a!, "01JZZZZZZZZZZZZZZZZZZZZZZX"]);
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
    expect(await countLiveTasks(db(), queue, T0 + 10)).toEqual({ due: 1, notDue: 1, processing: 1 });
    expect(await countLiveTasks(db(), queue, T0 + 60_000)).toEqual({ due: 2, notDue: 0, processing: 1 });
    expect(await countLiveTasks(db(), uniqueQueue("live-none"), T0)).toEqual({ due: 0, notDue: 0, processing: 0 });
  });
});
