import { expect } from "vitest";
import { uniqueQueue } from "../helpers";
import { complete, deadTask, enqueueOne, lease, leaseOne } from "./api";

export interface RouteCall {
  /** The operation as the OpenAPI document names it, e.g. "post /v1/queues/{queue}/tasks". */
  operation: string;
  method: string;
  path: string;
  body?: unknown;
}

/**
 * A queue holding a task in every state, and one request per /v1 route that, if it were served, would
 * change or reveal it. Ordered so that with the right token every request succeeds in turn.
 */
export async function everyRoute(): Promise<{ queue: string; routes: RouteCall[] }> {
  const queue = uniqueQueue("routes");
  const dead = await deadTask(queue);
  await enqueueOne(queue);
  const done = await leaseOne(queue);
  expect((await complete(done.id, done.lease_token)).status).toBe(200);
  for (let i = 0; i < 3; i++) await enqueueOne(queue, { priority: 10 });
  const [l1, l2, l3] = await lease(queue, { max: 3 });
  const pending = await enqueueOne(queue);
  const future = new Date(Date.now() + 3_600_000).toISOString();
  const q = `/v1/queues/${queue}`;
  const routes: RouteCall[] = [
    { operation: "get /v1/tasks/{id}", method: "GET", path: `/v1/tasks/${pending}` },
    { operation: "get /v1/queues/{queue}/tasks", method: "GET", path: `${q}/tasks` },
    { operation: "get /v1/queues", method: "GET", path: "/v1/queues" },
    { operation: "get /v1/queues/{queue}/stats", method: "GET", path: `${q}/stats` },
    { operation: "get /v1/queues/{queue}/config", method: "GET", path: `${q}/config` },
    { operation: "put /v1/queues/{queue}/config", method: "PUT", path: `${q}/config`, body: { max_attempts: 7 } },
    { operation: "post /v1/queues/{queue}/tasks", method: "POST", path: `${q}/tasks`, body: { payload: 1 } },
    {
      operation: "post /v1/tasks/{id}/heartbeat",
      method: "POST",
      path: `/v1/tasks/${l1!.id}/heartbeat`,
      body: { lease_token: l1!.lease_token, progress: 50 },
    },
    {
      operation: "post /v1/tasks/{id}/complete",
      method: "POST",
      path: `/v1/tasks/${l1!.id}/complete`,
      body: { lease_token: l1!.lease_token },
    },
    {
      operation: "post /v1/tasks/{id}/fail",
      method: "POST",
      path: `/v1/tasks/${l2!.id}/fail`,
      body: { lease_token: l2!.lease_token, error: "boom" },
    },
    {
      operation: "post /v1/queues/{queue}/ack",
      method: "POST",
      path: `${q}/ack`,
      body: { complete: [{ id: l3!.id, lease_token: l3!.lease_token }] },
    },
    { operation: "post /v1/tasks/{id}/cancel", method: "POST", path: `/v1/tasks/${pending}/cancel` },
    { operation: "post /v1/queues/{queue}/cancel", method: "POST", path: `${q}/cancel`, body: { all: true } },
    { operation: "post /v1/queues/{queue}/lease", method: "POST", path: `${q}/lease`, body: { max: 10 } },
    { operation: "post /v1/tasks/{id}/retry", method: "POST", path: `/v1/tasks/${dead}/retry` },
    {
      operation: "post /v1/queues/{queue}/redrive",
      method: "POST",
      path: `${q}/redrive`,
      body: { state: "cancelled" },
    },
    { operation: "post /v1/queues/{queue}/purge", method: "POST", path: `${q}/purge`, body: { before: future } },
  ];
  return { queue, routes };
}
