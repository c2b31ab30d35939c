import * as z from "zod";
import { ApiRoutes } from "../api-routes";
import { processorEngine } from "../../processors/registry";
import type { AppEnv } from "../app-env";
import { authRoute, jsonResponse } from "../route-helpers";
import { validationHook } from "../validation";

const ProcessorsResponse = z.object({
  processors: z.array(
    z.object({
      type: z.string(),
      engine: z.string(),
      available: z.boolean(),
      note: z.string().optional(),
    }),
  ),
});

const listRoute = authRoute({
  method: "get",
  path: "/v1/processors",
  tags: ["processors"],
  summary: "The registered processors and which engine each would use with this Worker's bindings",
  responses: { 200: jsonResponse(ProcessorsResponse) },
});

export const processorRoutes = new ApiRoutes<AppEnv>({ defaultHook: validationHook }).openapi(listRoute, (c) =>
  c.json(
    {
      processors: c.var.op.processors.list().map((p) => {
        const engine = processorEngine(p, c.env);
        return { type: p.type, engine: engine.name, available: engine.available, note: engine.note };
      }),
    },
    200,
  ),
);
