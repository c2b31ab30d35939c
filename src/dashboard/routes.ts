import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { Hono } from "hono";
import { mergeShardRows } from "../shards/cross-shard";
import { readRoute, routeShards } from "../shards/queue-route";
import type { AppEnv } from "../http/app-env";
import { errorResponses, jsonResponse } from "../http/route-helpers";
import { QueueParams, ThroughputResponse } from "../http/schemas";
import { validationHook } from "../http/validation";
import { toIso } from "../engine/time";
import { DASHBOARD_HTML } from "./page";
import { throughputSeries } from "./throughput";

/** The dashboard's page and the `/` redirect to it. The page holds no data: it signs in with the token
 * (kept in sessionStorage) and reads everything through /v1. */
export const dashboardPages = new Hono<AppEnv>()
  .get("/", (c) => c.redirect("/dashboard", 302))
  .get("/dashboard", (c) =>
    c.html(DASHBOARD_HTML, 200, {
      // The page runs only its own inline script and talks only to this origin.
      "Content-Security-Policy":
        "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; media-src blob:; img-src data:",
      "Cache-Control": "no-cache",
    }),
  );

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
export const throughputRoutes = new OpenAPIHono<AppEnv>({ defaultHook: validationHook }).openapi(
  throughputRoute,
  async (c) => {
    const { queue } = c.req.valid("param");
    const hours = Number(c.req.valid("query").hours);
    const route = await readRoute(c.env, queue, { replica: true });
    const perShard = await Promise.all(
      routeShards(route).map((s) => throughputSeries(s.db, queue, c.var.now - hours * 3_600_000, c.var.now)),
    );
    const rows = mergeShardRows(perShard, ["minute"]);
    return c.json({ minutes: rows.map((r) => ({ ...r, minute: toIso(r.minute) })) }, 200);
  },
);
