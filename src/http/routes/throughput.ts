import * as z from "zod";
import { createRoute, ApiRoutes } from "../api-routes";
import { QueueParams, ThroughputResponse } from "../../contracts/api";
import { toIso } from "../../contracts/time";
import { mergeShardRows } from "../../shards/cross-shard";
import { readRoute, routeShards } from "../../shards/queue-route";
import type { AppEnv } from "../app-env";
import { errorResponses, jsonResponse } from "../route-helpers";
import { validationHook } from "../validation";

const throughputRoute = createRoute({
  method: "get",
  path: "/v1/queues/{queue}/throughput",
  tags: ["queues"],
  summary: "Enqueued, completed and failed per minute (the dashboard's chart), from the per-minute counters",
  security: [{ Bearer: [] }],
  request: {
    params: QueueParams,
    query: z.object({ hours: z.enum(["1", "24"]).default("1") }),
  },
  responses: {
    200: jsonResponse(ThroughputResponse),
    ...errorResponses,
  },
});

/** The chart's data, behind the bearer token like the rest of /v1. */
export const throughputRoutes = new ApiRoutes<AppEnv>({ defaultHook: validationHook }).openapi(
  throughputRoute,
  async (c) => {
    const { queue } = c.req.valid("param");
    const hours = Number(c.req.valid("query").hours);
    const route = await readRoute(c.env, queue, { replica: true });
    const perShard = await Promise.all(
      routeShards(route).map((s) => s.store.throughputSeries(queue, c.var.now - hours * 3_600_000, c.var.now)),
    );
    const rows = mergeShardRows(perShard, ["minute"]);
    return c.json({ minutes: rows.map((r) => ({ ...r, minute: toIso(r.minute) })) }, 200);
  },
);
