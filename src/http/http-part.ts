import type { OpenAPIHono } from "@hono/zod-openapi";
import type { ProcessorRegistry } from "../processors/registry";
import type { AppEnv } from "./app-env";

/**
 * A part of the HTTP surface a Worker opts into by passing it to createEdgeq (`edgeq/dashboard`,
 * `edgeq/sqs`, `edgeq/reference`, src/http/parts/): the app imports none, so a Worker that leaves one out
 * does not bundle its code. `name` keeps one part from being passed as another.
 *
 * @example
 * import { sqs } from "edgeq/sqs";
 * const edgeq = createEdgeq({ processors, sqs });
 */
export interface HttpPart<Name extends "dashboard" | "sqs" | "reference"> {
  readonly name: Name;
  /** Adds the part's routes to the app, as it is built (buildApp). */
  mount(app: OpenAPIHono<AppEnv>, deps: { processors: ProcessorRegistry }): void;
}
