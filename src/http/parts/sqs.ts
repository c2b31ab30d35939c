import { sqsRoutes } from "../../sqs/endpoint";
import type { HttpPart } from "../http-part";

/**
 * The SQS-compatible endpoint (docs/sqs.md), as `edgeq/sqs`: SigV4-signed requests at `/`, outside /v1 and
 * its bearer token, for AWS SDKs and tools. Pass it to createEdgeq to serve it.
 *
 * @example
 * import { createEdgeq } from "edgeq";
 * import { sqs } from "edgeq/sqs";
 * const edgeq = createEdgeq({ processors, sqs });
 */
export const sqs: HttpPart<"sqs"> = {
  name: "sqs",
  mount: (app, { processors }) => void app.route("/", sqsRoutes(processors)),
};
