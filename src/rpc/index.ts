/**
 * `edgeq/rpc`: what a Worker that calls edgeq over a service binding imports — small, without edgeq's
 * server. Its own bundle carries only this wrapper and the error class.
 *
 * @example
 * import { edgeqRpc, EdgeqError, type EdgeqService } from "edgeq/rpc";
 * interface Env { EDGEQ: EdgeqService }
 * const { tasks } = await edgeqRpc(env.EDGEQ).enqueue("renders", { payload: { text: "hi" } });
 */
export { edgeqRpc, valueOf, type EdgeqRpc } from "./edgeq-rpc";
export {
  DEFAULT_LINGER_MAX_BATCH,
  DEFAULT_LINGER_MAX_BYTES,
  DEFAULT_LINGER_MS,
  type LingerOptions,
} from "../contracts/enqueue-linger";
export type { RpcOutcome, RpcRefusal } from "./rpc-outcome";
export { EdgeqError, type EdgeqErrorCode, type ErrorCode } from "../contracts/errors";
export type { EdgeqEntrypoint, EdgeqService, JsonValue, RpcLeasedTask, RpcSchedule, RpcTask } from "./edgeq-entrypoint";
