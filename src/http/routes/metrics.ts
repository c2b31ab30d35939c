import * as z from "zod";
import { ApiRoutes } from "../api-routes";
import { EXPOSITION_CONTENT_TYPE } from "../../metrics/exposition";
import { readStores } from "../../shards/cross-shard";
import { renderMetrics } from "../../metrics/render-metrics";
import type { AppEnv } from "../app-env";
import { authRoute } from "../route-helpers";
import { validationHook } from "../validation";

const metricsRoute = authRoute({
  method: "get",
  path: "/metrics",
  tags: ["metrics"],
  summary: "Prometheus metrics: live gauges per queue, counters and histograms per queue and type",
  responses: {
    200: {
      description: "The Prometheus text exposition format (version 0.0.4)",
      content: { "text/plain": { schema: z.string() } },
    },
  },
});

export const metricsRoutes = new ApiRoutes<AppEnv>({ defaultHook: validationHook }).openapi(metricsRoute, async (c) =>
  c.text(await renderMetrics(c.var.db, c.var.now, undefined, readStores(c.env)), 200, {
    "content-type": EXPOSITION_CONTENT_TYPE,
  }),
);
