import { describe, expect, it } from "vitest";
import { EVENT_QUIET_MS } from "../../src/contracts/limits";
import { uniqueQueue } from "../helpers";
import { callWith as api, countingEnv } from "../support/counting-env";
import { openStream, type Stream } from "./socket";

/** Coordinator requests for enqueue -> lease -> complete of `batch` tasks, per call; with a client listening
 * to the queue's events when `listening`. */
async function lifecycle(batch: number, listening: boolean) {
  const queue = uniqueQueue("cost-ev");
  const stream: Stream | undefined = listening ? await openStream(`/v1/queues/${queue}/events`) : undefined;
  const counted = countingEnv();
  const started = Date.now();
  const tasks = Array.from({ length: batch }, (_, i) => ({ payload: { i } }));
  await api(counted.env, "POST", `/v1/queues/${queue}/tasks`, { tasks });
  const enqueue = counted.calls.splice(0).map((c) => c.call);
  const leased = (await api(counted.env, "POST", `/v1/queues/${queue}/lease`, { max: batch })) as {
    tasks: Array<{ id: string; lease_token: string }>;
  };
  expect(leased.tasks).toHaveLength(batch);
  const lease = counted.calls.splice(0).map((c) => c.call);
  const complete = leased.tasks.map((t) => ({ id: t.id, lease_token: t.lease_token }));
  await api(counted.env, "POST", `/v1/queues/${queue}/ack`, { complete });
  // Reports of finished tasks to the waits for them (src/effects/task-waiters.ts) are counted apart: at most
  // one per ack call, none while the coordinator's answer that nobody waits is fresh (TASK_WAIT_*_QUIET_MS).
  const acked = counted.calls.splice(0).map((c) => c.call);
  const ack = acked.filter((c) => c !== "COORDINATOR.tasksFinished");
  expect(acked.length - ack.length).toBeLessThanOrEqual(1);
  if (stream) {
    // Every event reached the listener: enqueued, leased and completed for each task.
    expect(await stream.taskEvents(3 * batch)).toHaveLength(3 * batch);
    stream.close();
  }
  return { enqueue, lease, ack, tookMs: Date.now() - started };
}

describe("what events cost in Durable Object requests", () => {
  // Without events: enqueue wakes the coordinator (1 notify); a direct lease and a completion without
  // children make no Durable Object call. Events add one request to the queue's event hub per call —
  // enqueue, lease, ack — sent beside the wake-up, not after it: +3 requests per batch, i.e. +3 per task
  // at batch 1, +0.03 at batch 100 (Durable Object requests bill $0.15 per million).
  it("adds one event hub request per enqueue, lease and ack call while a client listens", async () => {
    for (const batch of [1, 100]) {
      const { enqueue, lease, ack } = await lifecycle(batch, true);
      const calls = { enqueue, lease, ack };
      expect(calls).toEqual({
        enqueue: ["COORDINATOR.notify", "EVENT_HUB.publish"],
        lease: ["EVENT_HUB.publish"],
        ack: ["EVENT_HUB.publish"],
      });
      const perTask = (calls.enqueue.length + calls.lease.length + calls.ack.length) / batch;
      console.log(`events: ${perTask} Durable Object requests per task at batch ${batch} (without: ${1 / batch})`);
    }
  });

  // With nobody listening the hub answers so, and this isolate skips the queue's events for EVENT_QUIET_MS
  // (src/effects/quiet-hubs.ts): one request, then none — the wake-up alone, as without events.
  it("adds one event hub request per quiet spell while nobody listens", async () => {
    for (const batch of [1, 100]) {
      const { tookMs, ...calls } = await lifecycle(batch, false);
      expect(calls.enqueue).toEqual(["COORDINATOR.notify", "EVENT_HUB.publish"]);
      // A machine slow enough to take longer than the spell publishes once more after it, never more.
      const hub = [...calls.lease, ...calls.ack];
      if (tookMs < EVENT_QUIET_MS) expect(hub).toEqual([]);
      else expect(hub.length).toBeLessThanOrEqual(1);
    }
  });
});
