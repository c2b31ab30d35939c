import { Hono } from "hono";
import { createMiddleware } from "hono/factory";
import { EdgeqError } from "../../contracts/errors";
import { runTick } from "../../cron/tick";
import { readSettings } from "../../env";
import type { AppEnv } from "../app-env";
import { requireBearer } from "../auth";
import { errorResponse } from "../error-handler";

/** Where `npm start` runs the cron tick (scripts/cron-driver.mjs names it too). */
export const LOCAL_TICK_PATH = "/__tick";

/** Outside development the path is not served at all (404, as any unknown path); in it, only POST is. */
const developmentOnly = createMiddleware<AppEnv>(async (c, next) => {
  if (readSettings(c.env).ENVIRONMENT !== "development") {
    return errorResponse(c, new EdgeqError("not_found", `no route for ${c.req.method} ${c.req.path}`));
  }
  if (c.req.method !== "POST") {
    const message = `${c.req.method} is not allowed on ${c.req.path}; it takes POST`;
    return errorResponse(c, new EdgeqError("method_not_allowed", message), { Allow: "POST" });
  }
  await next();
});

/**
 * `POST /__tick`, in development only (`npm start`): runs the cron tick now, behind the bearer token, and
 * answers its result. It stands in for `wrangler dev`'s own ways to call `scheduled()` —
 * `/cdn-cgi/local/scheduled` (also `/cdn-cgi/handler/scheduled`, `/cdn-cgi/mf/scheduled`) and
 * `--test-scheduled`'s `/__scheduled` — which answer anyone, take the tick's clock from the query
 * (`?time=`) and cannot be switched off; the Worker refuses those in development (src/app/create-edgeq.ts).
 * The clock here is the Worker's. Deployed, Cloudflare's Cron Triggers run the tick and this path is a 404.
 * Not in the OpenAPI document: it is local tooling, like the routes it replaces (docs/api.md, "What
 * `npm start` serves").
 *
 * @example
 * await fetch(`${url}/__tick`, { method: "POST", headers: { Authorization: `Bearer ${token}` } }); // 200 TickResult
 */
export const localTickRoutes = new Hono<AppEnv>().all(LOCAL_TICK_PATH, developmentOnly, requireBearer, async (c) => {
  const result = await runTick(c.env, Date.now());
  // The line scheduled() logs, so `npm start`'s output reads the same as a deployed Worker's logs.
  console.log("cron tick", JSON.stringify(result));
  return c.json(result, 200);
});
