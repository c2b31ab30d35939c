import * as z from "zod";
import { ApiRoutes } from "../api-routes";
import { component } from "../../contracts/component";
import { moveQueue, queuePlacement } from "../../operations/move";
import { shardNames } from "../../shards/shard-set";
import type { AppEnv } from "../app-env";
import { authRoute, jsonBody, jsonResponse } from "../route-helpers";
import { QueueParams } from "../../contracts/api";
import { validationHook } from "../validation";

const PlacementResponse = z
  .object({
    queue: z.string(),
    shards: z.array(z.string()).meta({ description: "every shard this Worker is bound to" }),
    partitions: z.array(
      z.object({
        part: z.number().int(),
        shard: z.string(),
        move: z
          .object({
            from: z.string(),
            state: z.string().nullable().meta({ description: "copying, then settling until the old shard is let go" }),
            started_at: z.number().int().nullable(),
            relayed: z.number().int(),
            left_on_source: z.number().int(),
          })
          .nullable(),
      }),
    ),
  })
  .meta(component("Placement"));

/** Which queues the two routes answer for (src/shards/known-queue.ts). */
const KNOWN_QUEUE_RULE =
  "404 `not_found` for a queue never used: no task (in any state) and no stored config — what GET /v1/queues lists. A move places nothing for such a name.";

const getPlacementRoute = authRoute({
  method: "get",
  path: "/v1/queues/{queue}/placement",
  tags: ["queues"],
  summary: "Which shard holds each partition of the queue, and a move's progress",
  description: KNOWN_QUEUE_RULE,
  request: { params: QueueParams },
  responses: { 200: jsonResponse(PlacementResponse) },
});

const moveRoute = authRoute({
  method: "post",
  path: "/v1/queues/{queue}/move",
  tags: ["queues"],
  summary: "Move a partition of the queue to another shard, online (no task lost or duplicated)",
  description: KNOWN_QUEUE_RULE,
  request: {
    params: QueueParams,
    body: jsonBody(
      z.strictObject({
        shard: z.string().min(1).max(64).meta({ description: "the destination's binding name, e.g. DB_1" }),
        part: z
          .number()
          .int()
          .min(0)
          .default(0)
          .meta({ description: "which partition (0 for an unpartitioned queue)" }),
      }),
    ),
  },
  responses: { 202: jsonResponse(PlacementResponse, "Started; GET /placement shows its progress") },
});

export const placementRoutes = new ApiRoutes<AppEnv>({ defaultHook: validationHook })
  .openapi(getPlacementRoute, async (c) => {
    const { queue } = c.req.valid("param");
    return c.json({ queue, shards: shardNames(c.env), partitions: await queuePlacement(c.var.op, queue) }, 200);
  })
  .openapi(moveRoute, async (c) => {
    const { queue } = c.req.valid("param");
    const { shard, part } = c.req.valid("json");
    const partitions = await moveQueue(c.var.op, queue, part, shard);
    return c.json({ queue, shards: shardNames(c.env), partitions }, 202);
  });
