import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import worker from "../../src/index";
import type { Env } from "../../src/env";
import { request } from "../http/api";
import { uniqueQueue } from "../helpers";
import { countingEnv } from "../support/counting-env";

/** Runs one API call against the Worker with `workerEnv`, waiting for its waitUntil work. */
async function api(workerEnv: Env, method: string, path: string, body: unknown): Promise<unknown> {
  const ctx = createExecutionContext();
  const res = await worker.fetch(request(method, path, { body }), workerEnv, ctx);
  await waitOnExecutionContext(ctx);
  expect(res.status, await res.clone().text()).toBeLessThan(300);
  return res.json();
}

/** Coordinator requests for enqueue -> lease -> complete of `batch` tasks, per call. */
async function lifecycle(batch: number) {
  const queue = uniqueQueue("cost-ev");
  const counted = countingEnv();
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
  const ack = counted.calls.splice(0).map((c) => c.call);
  return { enqueue, lease, ack };
}

describe("what events cost in Durable Object requests", () => {
  // Without events: enqueue wakes the coordinator (1 notify); a direct lease and a completion without
  // children make no Durable Object call. Events add one request to the queue's event hub per call —
  // enqueue, lease, ack — sent beside the wake-up, not after it: +3 requests per batch, i.e. +3 per task
  // at batch 1, +0.03 at batch 100 (Durable Object requests bill $0.15 per million).
  it("adds one event hub request per enqueue, lease and ack call", async () => {
    for (const batch of [1, 100]) {
      const calls = await lifecycle(batch);
      expect(calls).toEqual({
        enqueue: ["COORDINATOR.notify", "EVENT_HUB.publish"],
        lease: ["EVENT_HUB.publish"],
        ack: ["EVENT_HUB.publish"],
      });
      const perTask = (calls.enqueue.length + calls.lease.length + calls.ack.length) / batch;
      console.log(`events: ${perTask} Durable Object requests per task at batch ${batch} (without: ${1 / batch})`);
    }
  });
});
