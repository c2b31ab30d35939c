/**
 * `edgeq/client`: a typed client of the edgeq HTTP API for Node, Workers and browsers (fetch only).
 *
 * @example
 * import { EdgeqClient, EdgeqError } from "edgeq/client";
 * const edgeq = new EdgeqClient({ url: "https://edgeq.example.workers.dev", token });
 * await edgeq.enqueue("emails", { type: "welcome", payload: { to: "a@example.com" } });
 */
export { EdgeqClient, type CallOptions, type EdgeqClientOptions } from "./edgeq-client";
export {
  DEFAULT_LINGER_MAX_BATCH,
  DEFAULT_LINGER_MAX_BYTES,
  DEFAULT_LINGER_MS,
  type LingerOptions,
} from "../contracts/enqueue-linger";
export { EdgeqError, ERRORS, type EdgeqErrorCode, type ErrorCode } from "../contracts/errors";
export type * from "./types";
