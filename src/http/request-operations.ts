import type { Context } from "hono";
import { Effects } from "../effects/follow";
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
  };
}
