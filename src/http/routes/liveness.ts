import * as z from "zod";
import { createRoute, ApiRoutes } from "../api-routes";
import { acceptedTokens, readSettings } from "../../env";
import type { AppEnv } from "../app-env";
import { jsonResponse } from "../route-helpers";

const livenessRoute = createRoute({
  method: "get",
  path: "/health",
  tags: ["health"],
  summary: "Liveness, without auth (for load balancers and uptime checks): ok when the Worker can serve",
  description:
    "503 `not_configured` in production without an EDGEQ_TOKEN secret (the Worker refuses to serve rather than run open). Readiness, which also asks D1, is GET /health/ready.",
  // Public on purpose: an uptime check holds no token.
  security: [],
  responses: {
    200: jsonResponse(z.object({ status: z.literal("ok") })),
    503: jsonResponse(z.object({ status: z.literal("not_configured") }), "EDGEQ_TOKEN is not set in production"),
  },
});

/** GET /health: public liveness, in the OpenAPI document. */
export const livenessRoutes = new ApiRoutes<AppEnv>().openapi(livenessRoute, (c) => {
  const configured = acceptedTokens(readSettings(c.env)).length > 0;
  return configured ? c.json({ status: "ok" as const }, 200) : c.json({ status: "not_configured" as const }, 503);
});
