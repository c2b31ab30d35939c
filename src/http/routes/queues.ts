import { ApiRoutes } from "../api-routes";
import { MAX_BULK_PER_CALL, MAX_PURGE_PER_CALL } from "../../contracts/limits";
import { leaseApi } from "../../operations/api/lease-api";
import { queueApi } from "../../operations/api/queue-api";
import type { AppEnv } from "../app-env";
import { operationRoute } from "../operation-route";
import { validationHook } from "../validation";

/**
 * Routes addressed by queue: each the HTTP face of one operation of src/operations/api/ (queue-api.ts,
 * lease-api.ts), which holds its schemas, its mapping to the operation call and its answer.
 */
export const queueRoutes = new ApiRoutes<AppEnv>({ defaultHook: validationHook })
  .openapi(
    ...operationRoute(
      queueApi.enqueue,
      {
        method: "post",
        path: "/v1/queues/{queue}/tasks",
        tags: ["tasks"],
        summary:
          "Enqueue one task, or up to 10,000 as { tasks: [...] } (atomic up to 1,000; larger in order, 1,000 at a time)",
        description:
          'While the queue takes 100 or more single-task enqueues a second, a call of one plain task (no id, dedupe_key, group, key, then, depends_on, deadline or uniqueness key) may be held up to 5 ms by the queue\'s coordinator and written with the others that came meanwhile; its answer is its own, as alone (docs/operations.md, "Producers that enqueue one task per call").',
      },
      { status: 201, description: "Created (or deduplicated)" },
    ),
  )
  .openapi(
    ...operationRoute(queueApi.list, {
      method: "get",
      path: "/v1/queues/{queue}/tasks",
      tags: ["tasks"],
      summary: "A page of the queue's tasks in creation order",
    }),
  )
  .openapi(
    ...operationRoute(leaseApi.lease, {
      method: "post",
      path: "/v1/queues/{queue}/lease",
      tags: ["leases"],
      summary: "Lease up to max due tasks, waiting up to wait_s (long poll) when none is due",
    }),
  )
  .openapi(
    ...operationRoute(leaseApi.withdraw, {
      method: "post",
      path: "/v1/queues/{queue}/lease/withdraw",
      tags: ["leases"],
      summary: "Withdraw a long poll by the waiter_id it was sent with: it answers at once, with no tasks",
      description:
        "For a client that stops while its long poll waits: the poll is answered with `{ tasks: [] }` at once, and tasks already handed to it and not yet claimed are taken back: leasable at once (attempt refunded), yet still yours until another lease takes them. A name no poll has is a no-op (`withdrawn: false`), never an error. Keep reading the poll's answer: release the tasks it brought before the withdrawal arrived (200; `409 lease_lost` only when another worker's poll took one first: it is theirs).",
    }),
  )
  .openapi(
    ...operationRoute(leaseApi.ack, {
      method: "post",
      path: "/v1/queues/{queue}/ack",
      tags: ["leases"],
      summary: "Complete and fail up to 100 leased tasks; each item succeeds or fails on its own",
    }),
  )
  .openapi(
    ...operationRoute(leaseApi.extend, {
      method: "post",
      path: "/v1/queues/{queue}/extend",
      tags: ["leases"],
      summary: "Extend and claim up to 100 leases; each item succeeds or fails on its own",
      description:
        "Sets each lease to expire `visibility_timeout_s` from now (the item's, else the body's, else the lease's own length as it was leased) and claims it. A long poll answered after it waited hands out provisional leases (`claim_by`): claim them here on receipt.",
    }),
  )
  .openapi(
    ...operationRoute(queueApi.cancel, {
      method: "post",
      path: "/v1/queues/{queue}/cancel",
      tags: ["queues"],
      summary: "Cancel the queue's live tasks (optionally one group)",
    }),
  )
  .openapi(
    ...operationRoute(queueApi.pause, {
      method: "post",
      path: "/v1/queues/{queue}/pause",
      tags: ["queues"],
      summary: "Pause or resume the queue, or one key of it (flow control): nothing handed out while paused",
    }),
  )
  .openapi(
    ...operationRoute(queueApi.redrive, {
      method: "post",
      path: "/v1/queues/{queue}/redrive",
      tags: ["queues"],
      summary: "Move dead (or cancelled) tasks back to pending with attempts reset",
    }),
  )
  .openapi(
    ...operationRoute(queueApi.bulk, {
      method: "post",
      path: "/v1/queues/{queue}/bulk",
      tags: ["queues"],
      summary: "Cancel, retry or redrive the tasks a filter matches (state, type, group, created-at range)",
      description: `At most \`limit\` (≤ ${MAX_BULK_PER_CALL}) tasks per call on each database holding the queue; \`dry_run\` counts them instead. \`more\` says more match: call again until it is false.`,
    }),
  )
  .openapi(
    ...operationRoute(queueApi.purge, {
      method: "post",
      path: "/v1/queues/{queue}/purge",
      tags: ["queues"],
      summary: "Delete finished tasks that finished before a time",
      description: `At most ${MAX_PURGE_PER_CALL} tasks per call on each database holding the queue (one on an unpartitioned queue; a partitioned one may span several), so that other requests wait milliseconds behind a purge, not seconds. \`purged\` counts what went: call again until it is 0 (\`edgeq purge\` does).`,
    }),
  )
  .openapi(
    ...operationRoute(queueApi.all, {
      method: "get",
      path: "/v1/queues",
      tags: ["queues"],
      summary: "Every queue with its task counts per state",
    }),
  )
  .openapi(
    ...operationRoute(queueApi.stats, {
      method: "get",
      path: "/v1/queues/{queue}/stats",
      tags: ["queues"],
      summary:
        "Counts per state, due work and lag (optionally one group), and flow control: the queue's pause and its 20 busiest keys",
    }),
  );
