import { ApiRoutes } from "../api-routes";
import { configureQueueOperation, getQueueConfig } from "../../operations/api/queue-config-api";
import type { ProcessorRegistry } from "../../processors/registry";
import type { AppEnv } from "../app-env";
import { operationRoute } from "../operation-route";
import { validationHook } from "../validation";

/**
 * GET and PUT /v1/queues/{queue}/config, for a Worker with `processors` (PUT's body names them:
 * src/operations/api/queue-config-api.ts).
 *
 * @example
 * app.route("/", queueConfigRoutes(registry));
 */
export function queueConfigRoutes(processors: ProcessorRegistry) {
  return new ApiRoutes<AppEnv>({ defaultHook: validationHook })
    .openapi(
      ...operationRoute(getQueueConfig, {
        method: "get",
        path: "/v1/queues/{queue}/config",
        tags: ["queues"],
        summary: "The queue's effective configuration (stored values over defaults)",
      }),
    )
    .openapi(
      ...operationRoute(configureQueueOperation(processors), {
        method: "put",
        path: "/v1/queues/{queue}/config",
        tags: ["queues"],
        summary: "Set some or all of the queue's configuration",
      }),
    );
}
