import { ApiRoutes } from "../api-routes";
import { sql } from "drizzle-orm";
import { openDb } from "../../db/client";
import { toIso } from "../../contracts/time";
import { getHealthConfig, putHealthConfig, type QueueHealth } from "../../health/check-health";
import { checkHealth } from "../../operations/health";
import { worse, type HealthStatus } from "../../health/evaluate";
import { DEFAULTS_KEY } from "../../health/health-store";
import {
  HealthConfigBody,
  HealthConfigResponse,
  HealthListResponse,
  QueueHealthView,
} from "../../health/health-schemas";
import type { AppEnv } from "../app-env";
import { authRoute, jsonBody, jsonResponse } from "../route-helpers";
import { QueueParams } from "../../contracts/api";
import { validationHook } from "../validation";

const queueHealthRoute = authRoute({
  method: "get",
  path: "/v1/queues/{queue}/health",
  tags: ["health"],
  summary: "A queue's health (ok, warn or critical, with the reasons), evaluated now",
  request: { params: QueueParams },
  responses: { 200: jsonResponse(QueueHealthView) },
});

const allHealthRoute = authRoute({
  method: "get",
  path: "/v1/health/queues",
  tags: ["health"],
  summary: "Every queue's health, evaluated now, and the worst status among them",
  responses: { 200: jsonResponse(HealthListResponse) },
});

const getQueueConfigRoute = authRoute({
  method: "get",
  path: "/v1/queues/{queue}/health/config",
  tags: ["health"],
  summary: "A queue's own health thresholds and alert URL",
  request: { params: QueueParams },
  responses: { 200: jsonResponse(HealthConfigResponse) },
});

const putQueueConfigRoute = authRoute({
  method: "put",
  path: "/v1/queues/{queue}/health/config",
  tags: ["health"],
  summary: "Change a queue's health thresholds (merged) and alert URL (null clears)",
  request: { params: QueueParams, body: jsonBody(HealthConfigBody) },
  responses: { 200: jsonResponse(HealthConfigResponse) },
});

const getDefaultsRoute = authRoute({
  method: "get",
  path: "/v1/health/config",
  tags: ["health"],
  summary: "The health thresholds and alert URL every queue inherits",
  responses: { 200: jsonResponse(HealthConfigResponse) },
});

const putDefaultsRoute = authRoute({
  method: "put",
  path: "/v1/health/config",
  tags: ["health"],
  summary: "Change the health thresholds (merged) and alert URL every queue inherits",
  request: { body: jsonBody(HealthConfigBody) },
  responses: { 200: jsonResponse(HealthConfigResponse) },
});

/** The wire form of one queue's health: times as ISO-8601. */
function toView(h: QueueHealth) {
  return {
    ...h,
    since: toIso(h.since),
    alert: { ...h.alert, last_alert_at: toIso(h.alert.last_alert_at), next_attempt_at: toIso(h.alert.next_attempt_at) },
  };
}

export const healthRoutes = new ApiRoutes<AppEnv>({ defaultHook: validationHook })
  .openapi(queueHealthRoute, async (c) => {
    const [health] = await checkHealth(c.var.op, { queue: c.req.valid("param").queue });
    return c.json(toView(health!), 200);
  })
  .openapi(allHealthRoute, async (c) => {
    const queues = await checkHealth(c.var.op, {});
    const status = queues.reduce<HealthStatus>((s, q) => worse(s, q.status), "ok");
    return c.json({ status, queues: queues.map(toView) }, 200);
  })
  .openapi(getQueueConfigRoute, async (c) => c.json(await getHealthConfig(c.var.db, c.req.valid("param").queue), 200))
  .openapi(putQueueConfigRoute, async (c) =>
    c.json(await putHealthConfig(c.var.db, c.req.valid("param").queue, c.req.valid("json"), c.var.now), 200),
  )
  .openapi(getDefaultsRoute, async (c) => c.json(await getHealthConfig(c.var.db, DEFAULTS_KEY), 200))
  .openapi(putDefaultsRoute, async (c) =>
    c.json(await putHealthConfig(c.var.db, DEFAULTS_KEY, c.req.valid("json"), c.var.now), 200),
  );

/**
 * The readiness probe, public like /health (a load balancer or orchestrator probes without a token, and
 * the answer reveals nothing but whether D1 answers): 200 when a query to D1 succeeds, 503 when it fails.
 *
 * @example
 * app.route("/", readinessRoutes);
 */
export const readinessRoutes = new ApiRoutes<AppEnv>().get("/health/ready", async (c) => {
  try {
    await openDb(c.env.DB).get(sql`SELECT 1 AS one`);
    return c.json({ status: "ready", checks: { d1: "ok" } }, 200);
  } catch (error) {
    console.error("readiness: D1 did not answer", error);
    return c.json({ status: "unavailable", checks: { d1: "unavailable" } }, 503);
  }
});
