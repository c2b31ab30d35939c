import { runDurableObjectAlarm } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { row, uniqueQueue } from "../helpers";
import { call, enqueueOne } from "../http/api";
import { coordinator } from "../support/coordinator";
import { until } from "../support/until";
import { openStream } from "./socket";

/**
 * A push task's progress is published like an HTTP heartbeat's: the built-in processors report progress
 * through their context (echo: 50 %, "echoing"), and a listener — the dashboard's live bar, `edgeq watch` —
 * hears it while the coordinator runs the task.
 */
describe("push progress on the event stream", () => {
  it("a push task's progress reaches the queue's WebSocket listener, between its lease and its completion", async () => {
    const queue = uniqueQueue("push-progress");
    const configured = await call("PUT", `/v1/queues/${queue}/config`, { body: { mode: "push", processor: "echo" } });
    expect(configured.status, configured.text).toBe(200);
    const stream = await openStream(`/v1/queues/${queue}/events`);
    const id = await enqueueOne(queue, { payload: { text: "hello" } });
    // The enqueue's wake-up arms the coordinator's alarm; running it here rather than waiting for it.
    await until(`task ${id} to complete`, async () => {
      await runDurableObjectAlarm(coordinator(queue));
      return (await row(id)).state === "completed";
    });
    const events = await stream.taskEvents(4);
    expect(events.map((e) => [e.event, "task_id" in e ? e.task_id : null])).toEqual([
      ["enqueued", id],
      ["leased", id],
      ["progress", id],
      ["completed", id],
    ]);
    expect(events[2]).toMatchObject({ message: "echoing" });
    stream.close();
  });
});
