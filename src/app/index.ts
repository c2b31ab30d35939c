/**
 * The `edgeq` package's Worker library: what a Worker of your own imports to run edgeq with your
 * processors (README, "Use edgeq in your own Worker").
 *
 * @example
 * import { createEdgeq, type Processor } from "edgeq";
 * const edgeq = createEdgeq({ processors: [summarize] });
 * export const { Coordinator, EventHub, Scheduler, EdgeqRpc } = edgeq;
 * export default { fetch: edgeq.fetch, scheduled: edgeq.scheduled };
 */
export { createEdgeq, type Edgeq, type EdgeqOptions } from "./create-edgeq";
export type { Env } from "../env";
export type { EnqueueInput, PreparedEnqueue } from "../operations/batch-enqueue";
export type { AnyProcessor, Processor, ProcessorContext, ProcessorEnv, CompletedResults } from "../processors/types";
export { PermanentError, RetryAfterError } from "../processors/errors";
export { EdgeqError, ERRORS, type EdgeqErrorCode, type ErrorCode } from "../contracts/errors";
export { edgeqRpc, valueOf, type EdgeqRpc } from "../rpc/edgeq-rpc";
export type { RpcOutcome, RpcRefusal } from "../rpc/rpc-outcome";
export type {
  EdgeqEntrypoint,
  EdgeqService,
  JsonValue,
  RpcLeasedTask,
  RpcSchedule,
  RpcTask,
} from "../rpc/edgeq-entrypoint";
