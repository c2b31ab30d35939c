import { runDurableObjectAlarm } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import type { TaskRow } from "../../src/db/schema";
import { putQueueConfig } from "../../src/engine/queue-config";
import { db, row, uniqueQueue, PROCESSORS } from "../helpers";
import { alarmOf, coordinator } from "../support/coordinator";
import { until } from "../support/until";

/** End to end: HTTP enqueue -> the queue's coordinator -> its alarm runs the processor. No worker leases. */

/** Enqueues one task over HTTP, as a client would, and returns its id. */
async function enqueueOverHttp(queue: string, task: Record<string, unknown>): Promise<string> {
  const res = await exports.default.fetch(
    new Request(`http://edgeq.test/v1/queues/${queue}/tasks`, {
      method: "POST",
      headers: { Authorization: "Bearer test-token", "Content-Type": "application/json" },
      body: JSON.stringify(task),
    }),
  );
  expect(res.status).toBe(201);
  const body = await res.json<{ tasks: Array<{ id: string; state: string }> }>();
  expect(body.tasks).toEqual([{ id: expect.any(String), state: "pending", deduplicated: false }]);
  return body.tasks[0]!.id;
}

/**
 * Runs the coordinator's alarm until the task reaches `state` (bounded). The enqueue's notify reaches the
 * coordinator through waitUntil and sets an alarm due now; that alarm may also fire by itself, so this
 * runs it when one is scheduled and otherwise just reads the task again.
 */
async function alarmUntil(queue: string, id: string, state: TaskRow["state"]): Promise<TaskRow> {
  const stub = coordinator(queue);
  try {
    return await until(`task ${id} to become ${state}`, async () => {
      await runDurableObjectAlarm(stub);
      const current = await row(id);
      return current.state === state && current;
    });
  } catch (error) {
    throw new Error(`${(error as Error).message}: ${JSON.stringify(await row(id))}`, { cause: error });
  }
}

/** Waits (bounded) until the coordinator of `queue` has an alarm set, and returns it. */
const untilAlarm = (queue: string): Promise<number> =>
  until(`the coordinator of ${queue} to set an alarm`, () => alarmOf(queue));

describe("push mode through the coordinator", () => {
  it("an HTTP-enqueued echo task is run by the coordinator's alarm and completed with its result", async () => {
    const queue = uniqueQueue("push");
    await putQueueConfig(db(), queue, { mode: "push", processor: "echo" }, Date.now(), PROCESSORS);

    const id = await enqueueOverHttp(queue, { type: "anything", payload: { text: "hello, edge" } });
    const done = await alarmUntil(queue, id, "completed");

    expect(done).toMatchObject({
      state: "completed",
      result: JSON.stringify({ text: "hello, edge" }),
      progress: 100,
      progressMessage: "echoing",
      attempts: 1,
      leaseHolder: `edgeq-push:${queue}`,
    });
    expect(JSON.parse(done.errors)).toEqual([]);
  });

  it("a push queue's delayed task sets the alarm at its run_at and runs only once due", async () => {
    const queue = uniqueQueue("push");
    await putQueueConfig(db(), queue, { mode: "push", processor: "echo" }, Date.now(), PROCESSORS);

    const id = await enqueueOverHttp(queue, { payload: { text: "later" }, delay_s: 3600 });
    const runAt = (await row(id)).runAt;
    expect(await untilAlarm(queue)).toBe(runAt);

    // Fired early, the alarm runs nothing and re-arms for the task.
    expect(await runDurableObjectAlarm(coordinator(queue))).toBe(true);
    expect(await row(id)).toMatchObject({ state: "pending", attempts: 0 });
    expect(await alarmOf(queue)).toBe(runAt);

    await db().run(sql`UPDATE tasks SET run_at = ${Date.now() - 1000} WHERE id = ${id}`);
    const done = await alarmUntil(queue, id, "completed");
    expect(done.result).toBe(JSON.stringify({ text: "later" }));
  });

  it("a pull queue's alarm never runs processors, even for a task type that has one", async () => {
    const queue = uniqueQueue("pull");
    await putQueueConfig(db(), queue, { mode: "pull", processor: "echo" }, Date.now(), PROCESSORS);

    const id = await enqueueOverHttp(queue, {
      type: "echo",
      payload: { text: "not for the coordinator" },
      delay_s: 3600,
    });
    expect(await untilAlarm(queue)).toBe((await row(id)).runAt);
    await db().run(sql`UPDATE tasks SET run_at = ${Date.now() - 1000} WHERE id = ${id}`);

    expect(await runDurableObjectAlarm(coordinator(queue))).toBe(true);

    expect(await row(id)).toMatchObject({ state: "pending", attempts: 0, result: null, leaseToken: null });
    expect(await alarmOf(queue)).toBeNull();
  });
});
