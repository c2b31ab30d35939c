import type { Context } from "hono";
import { readSettings, type Settings } from "../env";
import { operationContext, type OperationContext } from "../operations/context";
import type { ProcessorRegistry } from "../processors/registry";
import type { AppEnv } from "./app-env";

/**
 * The operation context of one HTTP request (built by `operationContext`, as an RPC call's is): its
 * bindings, its clock reading, the Worker's processors, the request's `waitUntil` (what follows a change
 * runs after the answer), its disconnect signal and whether this platform reports one.
 *
 * @example
 * c.set("op", requestOperations(c, processors));
 */
export function requestOperations(c: Context<AppEnv>, processors: ProcessorRegistry): OperationContext {
  return operationContext({
    env: c.env,
    processors,
    now: c.get("now"),
    // Read when work is deferred: an app called without an execution context (a test's app.fetch) runs until then.
    waitUntil: (work) => c.executionCtx.waitUntil(work),
    signal: c.req.raw.signal,
    hangUpReported: hangUpsReported(readSettings(c.env)),
  });
}

/**
 * Whether a client's hang-up reaches this Worker as `request.signal` aborting (wrangler.toml sets
 * `enable_request_signal`). Examined, not assumed (docs/api.md, "What `request.signal` gives, where"): it
 * does in workerd itself (the tests, ENVIRONMENT "test") and, per Cloudflare's documentation, deployed
 * ("production"); through `wrangler dev`'s local proxy (`npm start`, ENVIRONMENT "development") it never
 * did. Where it does, a long poll whose client left is withdrawn at once, so its answer needs no short claim
 * window (src/operations/lease.ts).
 *
 * @example
 * hangUpsReported(readSettings(env)); // false under `npm start`
 */
export function hangUpsReported(settings: Pick<Settings, "ENVIRONMENT">): boolean {
  return settings.ENVIRONMENT !== "development";
}
