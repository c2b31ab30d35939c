import { OpenAPIHono, z } from "@hono/zod-openapi";
import { configureQueue } from "../../operations/queue";
import type { AppEnv } from "../app-env";
import { authRoute, jsonBody, jsonResponse } from "../route-helpers";
import { QueueConfigPatch, QueueConfigSchema, QueueParams } from "../../contracts/api";
import { validationHook } from "../validation";

/**
 * A push queue's processor: one of `types` (the Worker's registry), so the document lists them as an
 * enum and a generated client cannot send a name the server refuses. Built with the app, from the
 * registry it was given; kept out of src/contracts/api.ts, which the CLI bundles.
 */
function processorName(types: readonly string[]) {
  const description = "push mode: the processor for every task; null runs each task's own type";
  if (types.length === 0) return z.null().optional().openapi({ description });
  const names = [...types] as [string, ...string[]];
  return z
    .enum(names, { error: (issue) => `no processor ${JSON.stringify(issue.input)} (registered: ${names.join(", ")})` })
    .nullable()
    .optional()
    .openapi({ description });
}

/**
 * PUT /v1/queues/{queue}/config, for a Worker whose processors are `types`.
 *
 * @example
 * app.route("/", queueConfigRoutes(registry.types()));
 */
export function queueConfigRoutes(types: readonly string[]) {
  const putConfigRoute = authRoute({
    method: "put",
    path: "/v1/queues/{queue}/config",
    tags: ["queues"],
    summary: "Set some or all of the queue's configuration",
    request: { params: QueueParams, body: jsonBody(QueueConfigPatch.extend({ processor: processorName(types) })) },
    responses: { 200: jsonResponse(QueueConfigSchema) },
  });
  return new OpenAPIHono<AppEnv>({ defaultHook: validationHook }).openapi(putConfigRoute, async (c) => {
    const { queue } = c.req.valid("param");
    return c.json(await configureQueue(c.var.op, queue, c.req.valid("json")), 200);
  });
}
