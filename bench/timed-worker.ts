/**
 * The bench's build of the edgeq Worker: the production app (src/http/app.ts) behind one more middleware,
 * bench/request-timing.ts, which times every request into a `Server-Timing` header for the HTTP profile
 * (bench/section-http-profile.ts). The cron handler and the Durable Object classes are production's own.
 * It runs with wrangler.toml's [env.local] in place of `main`: `wrangler dev bench/timed-worker.ts` and
 * `wrangler deploy bench/timed-worker.ts --dry-run` (bench/edgeq-host.ts). The deployed Worker
 * (src/index.ts) carries none of this.
 */
import { Hono } from "hono";
import production from "../src/index";
import type { Env } from "../src/env";
import { buildApp } from "../src/http/app";
import type { AppEnv } from "../src/http/app-env";
import { onError } from "../src/http/error-handler";
import { notFound } from "../src/http/method-not-allowed";
import { REFERENCE_PROCESSORS } from "../src/plugins/reference";
import { ProcessorRegistry } from "../src/processors/registry";
import { requestTiming } from "./request-timing";

export { Coordinator, EventHub, Scheduler } from "../src/index";

// The same processors as the reference deployment (src/index.ts builds its registry the same way).
const app = buildApp({ processors: new ProcessorRegistry(REFERENCE_PROCESSORS) });
// The timing middleware first, then every route and middleware of the app, in the app's order, on the
// same request context (Hono's `route` copies the app's routes, each still answering errors with its
// `onError`); the app's not-found handler too, which `route` does not copy.
const timed = new Hono<AppEnv>().use("*", requestTiming).route("/", app);
timed.notFound(notFound(app));
timed.onError(onError);

export default { ...production, fetch: timed.fetch } satisfies ExportedHandler<Env>;
