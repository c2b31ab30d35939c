import { describe, expect, it } from "vitest";
import { enqueueTasks } from "../../src/engine/enqueue";
import { heartbeatTask } from "../../src/engine/heartbeat";
import { leaseTasks } from "../../src/engine/lease";
import { failTasks } from "../../src/engine/fail";
import { leasedTasksJson, toLeasedTaskView } from "../../src/engine/task-row";
import { db, row, uniqueQueue } from "../helpers";

describe("the lease answer rendered as text", () => {
  it("is exactly the JSON of the lease views, stored JSON spliced in unparsed", async () => {
    const queue = uniqueQueue("render");
    const now = Date.now();
    const payload = { text: 'héllo \u2028 "quoted" \\ ☃', n: [1, 2.5, null, { deep: true }] };
    const then = [{ type: "next", payload: { a: 1 } }];
    const [task] = (await enqueueTasks(db(), queue, [{ payload, then, dedupeKey: "k", group: "g" }], now)).tasks;
    const [first] = await leaseTasks(db(), { queue, max: 1, visibilityTimeoutS: 30, holder: "w" }, now);
    await heartbeatTask(
      db(),
      { id: task!.id, leaseToken: first!.leaseToken!, extendS: 30, checkpoint: { step: 2 } },
      now,
    );
    await failTasks(db(), [{ id: task!.id, leaseToken: first!.leaseToken!, message: "boom", retryAfterS: 0 }], now);
    const leased = await leaseTasks(db(), { queue, max: 1, visibilityTimeoutS: 30, holder: "w" }, now + 1);
    expect(leased).toHaveLength(1);
    const text = leasedTasksJson(leased);
    expect(JSON.parse(text)).toEqual({ tasks: leased.map(toLeasedTaskView) });
    expect(JSON.parse(text).tasks[0]).toMatchObject({ payload, then, checkpoint: { step: 2 }, result: null });
    expect((await row(task!.id)).attempts).toBe(2);
    expect(leasedTasksJson([])).toBe('{"tasks":[]}');
  });
});
