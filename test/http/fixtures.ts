import { rankShards } from "../../src/shards/directory";
import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { artifactKey } from "../../src/storage/artifacts";
import { uniqueQueue } from "../helpers";
import { complete, deadTask, enqueueOne, lease, leaseOne, read, send, type ApiResponse, type CallOptions } from "./api";

export interface RouteCall {
  /** The operation as the OpenAPI document names it, e.g. "post /v1/queues/{queue}/tasks". */
  operation: string;
  method: string;
  path: string;
  body?: unknown;
  /** Request options besides a JSON body: a raw (non-JSON) body and its headers. */
  options?: CallOptions;
}

/**
 * Sends one route's request; `auth` overrides how it authenticates (its headers merged over the route's).
 *
 * @example
 * await callRoute(route, { token: null });
 */
export async function callRoute(route: RouteCall, auth: CallOptions = {}): Promise<ApiResponse<unknown>> {
  const res = await send(route.method, route.path, {
    body: route.body,
    ...route.options,
    ...auth,
    headers: { ...route.options?.headers, ...auth.headers },
  });
  // An events route's WebSocket: opened, then closed (the response is what the test reads).
  if (res.webSocket) {
    res.webSocket.accept();
    res.webSocket.close(1000);
  }
  return read(res);
}

/** Operations in the OpenAPI document that take no token (everyRoute lists the others). */
export const PUBLIC_OPERATIONS = ["get /health"];

/** Operations that answer a WebSocket upgrade (101) rather than a 2xx: the event streams (a bearer token or a
 * ticket), and the worker session (a bearer token: workers are no browsers). */
export const UPGRADE_OPERATIONS = ["get /v1/queues/{queue}/events", "get /v1/tasks/{id}/events"];
export const SESSION_OPERATIONS = ["get /v1/queues/{queue}/session"];
const UPGRADE: CallOptions = { headers: { Upgrade: "websocket" } };

/** The artifact everyRoute stores before its requests, and the one its PUT route uploads. */
export const SEED_ARTIFACT = "seed.bin";
export const UPLOADED_ARTIFACT = "upload.bin";

/**
 * A queue holding a task in every state, and one request per /v1 route that, if it were served, would
 * change or reveal it. Ordered so that with the right token every request succeeds in turn.
 */
export async function everyRoute(): Promise<{ queue: string; artifactTask: string; routes: RouteCall[] }> {
  const queue = uniqueQueue("routes");
  const dead = await deadTask(queue);
  await enqueueOne(queue);
  const done = await leaseOne(queue);
  expect((await complete(done.id, done.lease_token)).status).toBe(200);
  for (let i = 0; i < 5; i++) await enqueueOne(queue, { priority: 10 });
  const [l1, l2, l3, l4, l5] = await lease(queue, { max: 5 });
  // l4 holds a live lease for the artifact upload, and already has one artifact to read back.
  await env.ARTIFACTS.put(artifactKey(l4!.id, SEED_ARTIFACT), new Uint8Array([1, 2, 3]), {
    httpMetadata: { contentType: "application/octet-stream" },
  });
  const pending = await enqueueOne(queue);
  // The move route's queue: one with a task (a queue never used is 404 there).
  await enqueueOne(`${queue}-moved`);
  const future = new Date(Date.now() + 3_600_000).toISOString();
  const q = `/v1/queues/${queue}`;
  const routes: RouteCall[] = [
    { operation: "get /v1/tasks/{id}", method: "GET", path: `/v1/tasks/${pending}` },
    { operation: "get /v1/tasks/{id}/dependencies", method: "GET", path: `/v1/tasks/${pending}/dependencies` },
    { operation: "get /v1/tasks/{id}/dependents", method: "GET", path: `/v1/tasks/${pending}/dependents` },
    // A wait of 0 s answers at once (the task is pending: finished false).
    { operation: "get /v1/tasks/{id}/wait", method: "GET", path: `/v1/tasks/${pending}/wait?timeout_s=0` },
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
    {
      operation: "post /v1/queues/{queue}/extend",
      method: "POST",
      path: `${q}/extend`,
      body: { leases: [{ id: l4!.id, lease_token: l4!.lease_token }] },
    },
    {
      operation: "post /v1/tasks/{id}/release",
      method: "POST",
      path: `/v1/tasks/${l5!.id}/release`,
      body: { lease_token: l5!.lease_token },
    },
    { operation: "post /v1/tasks/{id}/cancel", method: "POST", path: `/v1/tasks/${pending}/cancel` },
    { operation: "post /v1/queues/{queue}/cancel", method: "POST", path: `${q}/cancel`, body: { all: true } },
    { operation: "post /v1/queues/{queue}/lease", method: "POST", path: `${q}/lease`, body: { max: 10 } },
    {
      operation: "post /v1/queues/{queue}/lease/withdraw",
      method: "POST",
      path: `${q}/lease/withdraw`,
      body: { waiter_id: "no-such-poll" },
    },
    { operation: "post /v1/tasks/{id}/retry", method: "POST", path: `/v1/tasks/${dead}/retry` },
    {
      operation: "post /v1/queues/{queue}/redrive",
      method: "POST",
      path: `${q}/redrive`,
      body: { state: "cancelled" },
    },
    { operation: "post /v1/queues/{queue}/purge", method: "POST", path: `${q}/purge`, body: { before: future } },
    // Resumes (paused: false): a pause here would hold the leases of the routes after it.
    { operation: "post /v1/queues/{queue}/pause", method: "POST", path: `${q}/pause`, body: { paused: false } },
    // A dry run: counts what a cancel would change, changing nothing the routes after it need.
    {
      operation: "post /v1/queues/{queue}/bulk",
      method: "POST",
      path: `${q}/bulk`,
      body: { action: "cancel", filter: {}, dry_run: true },
    },
    { operation: "get /v1/tasks/{id}/artifacts", method: "GET", path: `/v1/tasks/${l4!.id}/artifacts` },
    {
      operation: "get /v1/tasks/{id}/artifacts/{name}",
      method: "GET",
      path: `/v1/tasks/${l4!.id}/artifacts/${SEED_ARTIFACT}`,
    },
    {
      operation: "put /v1/tasks/{id}/artifacts/{name}",
      method: "PUT",
      path: `/v1/tasks/${l4!.id}/artifacts/${UPLOADED_ARTIFACT}`,
      options: {
        raw: new Uint8Array([4, 5, 6, 7]),
        contentType: "application/octet-stream",
        headers: { "Edgeq-Lease-Token": l4!.lease_token, "Content-Length": "4" },
      },
    },
    { operation: "get /v1/processors", method: "GET", path: "/v1/processors" },
    { operation: "post /v1/events/tickets", method: "POST", path: "/v1/events/tickets" },
    { operation: "get /v1/queues/{queue}/throughput", method: "GET", path: `${q}/throughput?hours=24` },
    // The streams with the bearer token (the ticket's own refusals are in test/events/auth.test.ts).
    { operation: "get /v1/queues/{queue}/events", method: "GET", path: `${q}/events`, options: UPGRADE },
    { operation: "get /v1/tasks/{id}/events", method: "GET", path: `/v1/tasks/${l4!.id}/events`, options: UPGRADE },
    { operation: "get /v1/queues/{queue}/session", method: "GET", path: `${q}/session`, options: UPGRADE },
    { operation: "get /metrics", method: "GET", path: "/metrics" },
    { operation: "get /v1/queues/{queue}/health", method: "GET", path: `${q}/health` },
    { operation: "get /v1/health/queues", method: "GET", path: "/v1/health/queues" },
    { operation: "get /v1/queues/{queue}/health/config", method: "GET", path: `${q}/health/config` },
    {
      operation: "put /v1/queues/{queue}/health/config",
      method: "PUT",
      path: `${q}/health/config`,
      body: { thresholds: { due_depth: { warn: 5000 } } },
    },
    { operation: "get /v1/health/config", method: "GET", path: "/v1/health/config" },
    // Sets the defaults' thresholds to what they are: changes nothing any other test sees.
    { operation: "put /v1/health/config", method: "PUT", path: "/v1/health/config", body: { thresholds: {} } },
    {
      operation: "put /v1/schedules/{name}",
      method: "PUT",
      path: `/v1/schedules/${queue}`,
      body: { queue, cron: "0 0 1 1 *", paused: true },
    },
    { operation: "get /v1/schedules/{name}", method: "GET", path: `/v1/schedules/${queue}` },
    { operation: "get /v1/schedules", method: "GET", path: "/v1/schedules" },
    { operation: "post /v1/schedules/{name}/resume", method: "POST", path: `/v1/schedules/${queue}/resume` },
    { operation: "post /v1/schedules/{name}/pause", method: "POST", path: `/v1/schedules/${queue}/pause` },
    { operation: "post /v1/schedules/{name}/trigger", method: "POST", path: `/v1/schedules/${queue}/trigger` },
    { operation: "delete /v1/schedules/{name}", method: "DELETE", path: `/v1/schedules/${queue}` },
    { operation: "get /v1/queues/{queue}/placement", method: "GET", path: `${q}/placement` },
    // A queue of its own, moved to the shard its placement rule did not pick (the fixture queue stays put).
    {
      operation: "post /v1/queues/{queue}/move",
      method: "POST",
      path: `/v1/queues/${queue}-moved/move`,
      body: { shard: rankShards(`${queue}-moved`, ["DB", "DB_1"])[1] },
    },
  ];
  return { queue, artifactTask: l4!.id, routes };
}
