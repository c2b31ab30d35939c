import type { Context } from "hono";
import { bodyLimit } from "hono/body-limit";
import { createMiddleware } from "hono/factory";
import { openDb } from "../db/client";
import { EdgeqError } from "../contracts/errors";
import { placementRoutes } from "./routes/placement";
import type { AppEnv } from "./app-env";
import { requireBearer } from "./auth";
import { ApiRoutes } from "./api-routes";
import { onError } from "./error-handler";
import { notFound } from "./method-not-allowed";
import { healthRoutes, readinessRoutes } from "./routes/health";
import { livenessRoutes } from "./routes/liveness";
import { localTickRoutes } from "./routes/local-tick";
import { metricsRoutes } from "./routes/metrics";
import { scheduleRoutes } from "./routes/schedules";
import { queueRoutes } from "./routes/queues";
import { sessionRoutes } from "./routes/sessions";
import { queueConfigRoutes } from "./routes/queue-config";
import { artifactRoutes } from "./routes/artifacts";
import { processorRoutes } from "./routes/processors";
import { taskRoutes } from "./routes/tasks";
import { eventStreamRoutes, ticketRoutes } from "./routes/events";
import { throughputRoutes } from "./routes/throughput";
import { requireUtf8Json } from "./utf8-body";
import { validationHook } from "./validation";
import type { HttpPart } from "./http-part";
import type { ProcessorRegistry } from "../processors/registry";
import { requestOperations } from "./request-operations";

/** Largest request body: 10,000 tasks at a few KB each. Larger batches should be split. */
export const MAX_BODY_BYTES = 32 * 1024 * 1024;

/** What the app is built with, once, by createEdgeq (src/app/create-edgeq.ts). */
export interface AppDeps {
  /** The processors this Worker runs (push queues, config checks, GET /v1/processors). */
  processors: ProcessorRegistry;
  /** The parts of the HTTP surface the Worker opted into (src/http/parts/): none is bundled otherwise. */
  parts?: {
    /** The dashboard at /dashboard, `/` redirecting to it (`edgeq/dashboard`). */
    dashboard?: HttpPart<"dashboard">;
    /** The SQS-compatible endpoint (`edgeq/sqs`). */
    sqs?: HttpPart<"sqs">;
    /** The OpenAPI document at /openapi.json and the API reference at /docs (`edgeq/reference`). */
    reference?: HttpPart<"reference">;
  };
}

/**
 * Builds the HTTP API, with the parts the Worker opted into. Routes validate with zod, make one operation call
 * (src/operations/), and render; errors go to the one `onError`.
 *
 * @example
 * export default { fetch: buildApp({ processors: new ProcessorRegistry([echoProcessor]) }).fetch };
 */
export function buildApp(deps: AppDeps) {
  const app = new ApiRoutes<AppEnv>({ defaultHook: validationHook });
  const parts = deps.parts ?? {};
  app.onError(onError);
  app.notFound(notFound(app));

  // Liveness, public and in the OpenAPI document.
  app.route("/", livenessRoutes);

  // The dashboard (src/dashboard/): a page that signs in with the token and reads /v1; `/` redirects to it.
  parts.dashboard?.mount(app, deps);

  // The SQS-compatible endpoint (src/sqs/): SigV4-signed, outside /v1 and its bearer token.
  parts.sqs?.mount(app, deps);

  // Event streams authorise by ticket themselves (a browser's WebSocket cannot send Authorization).
  app.route("/", eventStreamRoutes);

  app.route("/", readinessRoutes);

  // `npm start`'s cron tick, behind the token (development only; src/http/routes/local-tick.ts).
  app.route("/", localTickRoutes);

  app.use("/v1/*", requireBearer);
  const jsonBodyLimit = bodyLimit({
    maxSize: MAX_BODY_BYTES,
    onError: () => {
      throw new EdgeqError("payload_too_large", `request bodies are limited to ${MAX_BODY_BYTES} bytes`);
    },
  });
  // Artifact uploads stream to R2 under their own limit (MAX_ARTIFACT_BYTES); every other body is JSON.
  const isUpload = (c: Context) => c.req.method === "PUT" && c.req.path.includes("/artifacts/");
  app.use("/v1/*", (c, next) => (isUpload(c) ? next() : jsonBodyLimit(c, next)));
  app.use("/v1/*", (c, next) => (isUpload(c) ? next() : requireUtf8Json(c, next)));
  const dbAndClock = createMiddleware<AppEnv>(async (c, next) => {
    c.set("db", openDb(c.env.DB));
    c.set("now", Date.now());
    c.set("op", requestOperations(c, deps.processors));
    await next();
  });
  app.use("/v1/*", dbAndClock);
  // Prometheus scrapes /metrics (its conventional path, outside /v1) with the same bearer token.
  app.use("/metrics", requireBearer, dbAndClock);

  const api = app
    .route("/", queueRoutes)
    .route("/", sessionRoutes)
    .route("/", queueConfigRoutes(deps.processors))
    .route("/", taskRoutes)
    .route("/", ticketRoutes)
    .route("/", throughputRoutes)
    .route("/", artifactRoutes)
    .route("/", processorRoutes)
    .route("/", metricsRoutes)
    .route("/", healthRoutes)
    .route("/", scheduleRoutes)
    .route("/", placementRoutes);
  // The document of every route above, and the reference page rendered from it.
  parts.reference?.mount(app, deps);
  return api;
}

/** The app's type, for the typed client (`hono/client`). */
export type EdgeqApp = ReturnType<typeof buildApp>;
