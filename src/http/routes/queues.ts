import { OpenAPIHono, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { listAllQueues } from "../../shards/cross-shard";
import { listTasksOf, purgeQueueOf, queueStatsOf } from "../../shards/queue-ops";
import { queueConfigOf } from "../../shards/queue-config-ops";
import { queueRoute, readRoute } from "../../shards/queue-route";
import { enqueue } from "../../operations/enqueue";
import { leaseTexts, withdrawPoll } from "../../operations/lease";
import { ackTasks, extendTaskLeases } from "../../operations/ack";
import { cancelQueue, redrive } from "../../operations/queue";
import { ackBatchOf, ackResults, extendItemsOf, extendResults, leaseAskOf, newTaskOf } from "../../operations/answers";
import { MAX_PURGE_PER_CALL } from "../../contracts/limits";
import { toTaskView } from "../../engine/task-row";
import { toIso } from "../../engine/time";
import type { AppEnv } from "../app-env";
import { authRoute, jsonBody, jsonResponse } from "../route-helpers";
import {
  AckBody,
  AckResponse,
  CancelQueueBody,
  EnqueueBody,
  EnqueueResponse,
  ExtendBody,
  ExtendResponse,
  LeaseBody,
  LeaseResponse,
  PurgeBody,
  QueueConfigSchema,
  QueueListResponse,
  QueueParams,
  QueueStatsResponse,
  RedriveBody,
  TaskListQuery,
  TaskListResponse,
  WithdrawBody,
  WithdrawResponse,
} from "../../contracts/api";
import { enqueueValidationHook, validationHook } from "../validation";

const enqueueRoute = authRoute({
  method: "post",
  path: "/v1/queues/{queue}/tasks",
  tags: ["tasks"],
  summary:
    "Enqueue one task, or up to 10,000 as { tasks: [...] } (atomic up to 1,000; larger in order, 1,000 at a time)",
  request: { params: QueueParams, body: jsonBody(EnqueueBody) },
  responses: { 201: jsonResponse(EnqueueResponse, "Created (or deduplicated)") },
});

const listTasksRoute = authRoute({
  method: "get",
  path: "/v1/queues/{queue}/tasks",
  tags: ["tasks"],
  summary: "A page of the queue's tasks in creation order",
  request: { params: QueueParams, query: TaskListQuery },
  responses: { 200: jsonResponse(TaskListResponse) },
});

const leaseRoute = authRoute({
  method: "post",
  path: "/v1/queues/{queue}/lease",
  tags: ["leases"],
  summary: "Lease up to max due tasks, waiting up to wait_s (long poll) when none is due",
  request: { params: QueueParams, body: jsonBody(LeaseBody) },
  responses: { 200: jsonResponse(LeaseResponse) },
});

const withdrawRoute = authRoute({
  method: "post",
  path: "/v1/queues/{queue}/lease/withdraw",
  tags: ["leases"],
  summary: "Withdraw a long poll by the waiter_id it was sent with: it answers at once, with no tasks",
  description:
    "For a client that stops while its long poll waits: the poll is answered with `{ tasks: [] }` at once, and tasks already handed to it and not yet claimed are taken back: leasable at once (attempt refunded), yet still yours until another lease takes them. A name no poll has is a no-op (`withdrawn: false`), never an error. Keep reading the poll's answer: release the tasks it brought before the withdrawal arrived (200; `409 lease_lost` only when another worker's poll took one first: it is theirs).",
  request: { params: QueueParams, body: jsonBody(WithdrawBody) },
  responses: { 200: jsonResponse(WithdrawResponse) },
});

const ackRoute = authRoute({
  method: "post",
  path: "/v1/queues/{queue}/ack",
  tags: ["leases"],
  summary: "Complete and fail up to 100 leased tasks; each item succeeds or fails on its own",
  request: { params: QueueParams, body: jsonBody(AckBody) },
  responses: { 200: jsonResponse(AckResponse) },
});

const extendRoute = authRoute({
  method: "post",
  path: "/v1/queues/{queue}/extend",
  tags: ["leases"],
  summary: "Extend and claim up to 100 leases; each item succeeds or fails on its own",
  description:
    "Sets each lease to expire `visibility_timeout_s` from now (the item's, else the body's, else the lease's own length as it was leased) and claims it. A long poll answered after it waited hands out provisional leases (`claim_by`): claim them here on receipt.",
  request: { params: QueueParams, body: jsonBody(ExtendBody) },
  responses: { 200: jsonResponse(ExtendResponse) },
});

const cancelQueueRoute = authRoute({
  method: "post",
  path: "/v1/queues/{queue}/cancel",
  tags: ["queues"],
  summary: "Cancel the queue's live tasks (optionally one group)",
  request: { params: QueueParams, body: jsonBody(CancelQueueBody) },
  responses: { 200: jsonResponse(z.object({ cancelled: z.number().int(), cancel_requested: z.number().int() })) },
});

const redriveRoute = authRoute({
  method: "post",
  path: "/v1/queues/{queue}/redrive",
  tags: ["queues"],
  summary: "Move dead (or cancelled) tasks back to pending with attempts reset",
  request: { params: QueueParams, body: jsonBody(RedriveBody) },
  responses: { 200: jsonResponse(z.object({ redriven: z.number().int(), ids: z.array(z.string()) })) },
});

const purgeRoute = authRoute({
  method: "post",
  path: "/v1/queues/{queue}/purge",
  tags: ["queues"],
  summary: "Delete finished tasks that finished before a time",
  description: `At most ${MAX_PURGE_PER_CALL} tasks per call on each database holding the queue (one on an unpartitioned queue; a partitioned one may span several), so that other requests wait milliseconds behind a purge, not seconds. \`purged\` counts what went: call again until it is 0 (\`edgeq purge\` does).`,
  request: { params: QueueParams, body: jsonBody(PurgeBody) },
  responses: { 200: jsonResponse(z.object({ purged: z.number().int() })) },
});

const listQueuesRoute = authRoute({
  method: "get",
  path: "/v1/queues",
  tags: ["queues"],
  summary: "Every queue with its task counts per state",
  responses: { 200: jsonResponse(QueueListResponse) },
});

const statsRoute = authRoute({
  method: "get",
  path: "/v1/queues/{queue}/stats",
  tags: ["queues"],
  summary: "Counts per state, due work and lag (optionally one group)",
  request: { params: QueueParams, query: z.object({ group: z.string().min(1).max(128).optional() }) },
  responses: { 200: jsonResponse(QueueStatsResponse) },
});

const getConfigRoute = authRoute({
  method: "get",
  path: "/v1/queues/{queue}/config",
  tags: ["queues"],
  summary: "The queue's effective configuration (stored values over defaults)",
  request: { params: QueueParams },
  responses: { 200: jsonResponse(QueueConfigSchema) },
});

/** An answer already rendered as JSON text (with leased tasks spliced in), sent as c.json would send it;
 * the route's declared response types it for the typed client. */
function jsonText(c: Context, text: string) {
  return c.body(text, 200, { "Content-Type": "application/json" }) as never;
}

/**
 * A lease for a request (POST /lease, or an ack's `lease`), its tasks as a JSON array's text (rendered
 * by SQLite without a wait: src/operations/lease.ts).
 */
async function leaseFor(c: Context<AppEnv>, queue: string, body: z.infer<typeof LeaseBody>): Promise<string> {
  const texts = await leaseTexts(c.var.op, queue, leaseAskOf(body));
  return `[${texts.join(",")}]`;
}

/** Enqueue validates with its own hook (see `enqueueValidationHook`), so it is an app of its own. */
const enqueueRoutes = new OpenAPIHono<AppEnv>({ defaultHook: enqueueValidationHook }).openapi(
  enqueueRoute,
  async (c) => {
    const { queue } = c.req.valid("param");
    const body = c.req.valid("json");
    const input = "tasks" in body ? body.tasks : [body];
    const result = await enqueue(
      c.var.op,
      queue,
      input.map((t) => newTaskOf(t, c.var.now)),
    );
    return c.json({ tasks: result.tasks }, 201);
  },
);

/** Routes addressed by queue. */
export const queueRoutes = new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
  .route("/", enqueueRoutes)
  .openapi(listTasksRoute, async (c) => {
    const { queue } = c.req.valid("param");
    const query = c.req.valid("query");
    const page = await listTasksOf(await readRoute(c.env, queue, { replica: true }), query);
    return c.json({ tasks: page.tasks.map(toTaskView), next_cursor: page.next_cursor }, 200);
  })
  .openapi(leaseRoute, async (c) => {
    const { queue } = c.req.valid("param");
    return jsonText(c, `{"tasks":${await leaseFor(c, queue, c.req.valid("json"))}}`);
  })
  .openapi(withdrawRoute, async (c) => {
    const { queue } = c.req.valid("param");
    return c.json(await withdrawPoll(c.var.op, queue, c.req.valid("json").waiter_id), 200);
  })
  .openapi(ackRoute, async (c) => {
    const body = c.req.valid("json");
    // The URL's queue scopes the ack: a task of another queue is not_found here.
    const { queue } = c.req.valid("param");
    const outcomes = await ackTasks(c.var.op, queue, ackBatchOf(body));
    const results = ackResults(outcomes);
    if (!body.lease) return c.json({ results }, 200);
    // The next lease, after the acks above were applied: the answer splices its tasks in as text.
    const tasks = await leaseFor(c, queue, body.lease);
    return jsonText(c, `{"results":${JSON.stringify(results)},"tasks":${tasks}}`);
  })
  .openapi(extendRoute, async (c) => {
    const { queue } = c.req.valid("param");
    const body = c.req.valid("json");
    const outcomes = await extendTaskLeases(c.var.op, queue, extendItemsOf(body));
    return c.json({ results: extendResults(outcomes, c.var.now) }, 200);
  })
  .openapi(cancelQueueRoute, async (c) => {
    const { queue } = c.req.valid("param");
    const { group } = c.req.valid("json");
    return c.json(await cancelQueue(c.var.op, queue, { group }), 200);
  })
  .openapi(redriveRoute, async (c) => {
    const { queue } = c.req.valid("param");
    return c.json(await redrive(c.var.op, queue, c.req.valid("json")), 200);
  })
  .openapi(purgeRoute, async (c) => {
    const { queue } = c.req.valid("param");
    const body = c.req.valid("json");
    const before =
      body.before !== undefined ? Date.parse(body.before) : c.var.now - Math.round((body.older_than_s ?? 0) * 1000);
    const route = await queueRoute(c.env, queue, c.var.now);
    return c.json(await purgeQueueOf(route, { before, states: body.states }), 200);
  })
  .openapi(listQueuesRoute, async (c) => c.json({ queues: await listAllQueues(c.env) }, 200))
  .openapi(statsRoute, async (c) => {
    const { queue } = c.req.valid("param");
    const route = await readRoute(c.env, queue, { replica: true });
    const stats = await queueStatsOf(route, c.req.valid("query"), c.var.now);
    return c.json({ ...stats, oldest_due_at: toIso(stats.oldest_due_at) }, 200);
  })
  .openapi(getConfigRoute, async (c) => {
    const { queue } = c.req.valid("param");
    return c.json(await queueConfigOf(await readRoute(c.env, queue)), 200);
  });
