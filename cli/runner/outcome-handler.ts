import { PermanentError, RetryAfterError, type Handler } from "../../src/node/index";
import type { TaskHandler } from "./types";

/**
 * A CLI handler as the SDK's worker takes it: a complete returns its result; a failure throws the error
 * class that says how (PermanentError: dead at once; RetryAfterError: not before its delay; else retryable).
 *
 * @example
 * new Worker(queue, sdkHandler(execHandler("./run.sh")), options);
 */
export function sdkHandler(handler: TaskHandler): Handler {
  return async (task, ctx) => {
    const outcome = await handler.run(task, ctx);
    if (outcome.kind === "complete") return outcome.result;
    if (!outcome.retryable) throw new PermanentError(outcome.error);
    if (outcome.retryAfterS !== undefined) throw new RetryAfterError(outcome.retryAfterS, outcome.error);
    throw new Error(outcome.error);
  };
}
