import type { Context } from "hono";
import { Effects } from "../effects/follow";
import { readSettings, type Settings } from "../env";
import type { OperationContext } from "../operations/context";
import type { ProcessorRegistry } from "../processors/registry";
import type { AppEnv } from "./app-env";

/**
 * The operation context of one HTTP request: its bindings, its clock reading, the Worker's processors,
 * and the effects owner bound to the request's `waitUntil` (what follows a change runs after the answer).
 *
 * @example
 * c.set("op", requestOperations(c, processors));
 */
export function requestOperations(c: Context<AppEnv>, processors: ProcessorRegistry): OperationContext {
  const defer = (work: Promise<unknown>) => c.executionCtx.waitUntil(work);
  return {
    env: c.env,
    now: c.get("now"),
    clock: () => Date.now(),
    processors,
    effects: new Effects(c.env, defer),
    defer,
    signal: c.req.raw.signal,
    hangUpReported: hangUpsReported(readSettings(c.env)),
  };
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
