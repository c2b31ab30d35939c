import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import worker from "../../src/index";
import type { Env } from "../../src/env";
import { request } from "../http/api";
import { uniqueQueue } from "../helpers";

/** The Worker's env with a COORDINATOR namespace that counts every request made to a coordinator. */
function countingEnv(): { env: Env; calls: string[] } {
  const calls: string[] = [];
  const namespace = env.COORDINATOR;
  const COORDINATOR = new Proxy(namespace, {
    get(target, prop) {
      if (prop === "get") {
        return (id: DurableObjectId) => {
          const stub = target.get(id);
          return new Proxy(stub, {
            get(s, method) {
              const value = Reflect.get(s, method) as unknown;
              if (typeof method !== "string" || typeof value !== "function") return value;
              return (...args: unknown[]) => {
                calls.push(method);
                // Called through the stub itself: an RPC method has no `.apply` of its own.
                return (s as unknown as Record<string, (...a: unknown[]) => unknown>)[method]!(...args);
              };
            },
          });
        };
      }
      const value = Reflect.get(target, prop) as unknown;
      return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { env: { ...env, COORDINATOR }, calls };
}

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
  const enqueue = counted.calls.splice(0);
  const leased = (await api(counted.env, "POST", `/v1/queues/${queue}/lease`, { max: batch })) as {
    tasks: Array<{ id: string; lease_token: string }>;
  };
  expect(leased.tasks).toHaveLength(batch);
  const lease = counted.calls.splice(0);
  const complete = leased.tasks.map((t) => ({ id: t.id, lease_token: t.lease_token }));
  await api(counted.env, "POST", `/v1/queues/${queue}/ack`, { complete });
  const ack = counted.calls.splice(0);
  return { enqueue, lease, ack };
}

describe("what events cost in Durable Object requests", () => {
  // Before events: enqueue woke the coordinator (1 notify); a direct lease and a completion without
  // children made no coordinator call. Events ride on the enqueue's call and add one request to the
  // lease and one to the ack: +2 requests per batch, i.e. +2 per task at batch 1, +0.02 at batch 100.
  it("adds one request per lease call and one per ack call, none per enqueue", async () => {
    for (const batch of [1, 100]) {
      const calls = await lifecycle(batch);
      expect(calls).toEqual({ enqueue: ["publish"], lease: ["publish"], ack: ["publish"] });
      const perTask = (calls.enqueue.length + calls.lease.length + calls.ack.length) / batch;
      console.log(`events: ${perTask} coordinator requests per task at batch ${batch} (was ${1 / batch})`);
    }
  });
});
