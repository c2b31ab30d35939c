import type { ZodType } from "zod";
import { describeZodError } from "../contracts/describe-zod-error";
import { PermanentError, RetryAfterError } from "../processors/errors";
import { TaskStopped, type LeasedTask, type Outcome, type RunTask, type TaskContext } from "./types";

/** A leased task whose payload is typed `P` (checked by the worker's schema when it has one). */
export type Task<P = unknown> = Omit<LeasedTask, "payload"> & { payload: P };

/** The function a {@link Worker} runs per task: what it returns is the task's result; what it throws fails
 * it — `PermanentError` for good (dead at once), `RetryAfterError` no sooner than its delay, anything else
 * retryable with the queue's backoff. */
export type Handler<P = unknown, R = unknown> = (task: Task<P>, ctx: TaskContext) => Promise<R> | R;

/**
 * Turns a {@link Handler} into the runner's outcome-returning function: the payload checked by `schema`
 * (a mismatch fails the task for good, naming the field), the return value completes it, a thrown error
 * fails it as its class says.
 *
 * @example
 * const run = outcomeRunner(async (task) => ({ size: task.payload.width }), z.object({ width: z.number() }));
 */
export function outcomeRunner<P, R>(handler: Handler<P, R>, schema?: ZodType<P>): RunTask {
  return async (task, ctx): Promise<Outcome> => {
    let payload = task.payload as P;
    if (schema) {
      const parsed = schema.safeParse(task.payload);
      if (!parsed.success) {
        return { kind: "fail", error: describeZodError(parsed.error, "payload"), retryable: false };
      }
      payload = parsed.data;
    }
    try {
      const result = await handler({ ...task, payload }, ctx);
      return { kind: "complete", result };
    } catch (error) {
      if (error instanceof TaskStopped) throw error;
      if (error instanceof PermanentError) return { kind: "fail", error: error.message, retryable: false };
      if (error instanceof RetryAfterError) {
        return { kind: "fail", error: error.message, retryable: true, retryAfterS: error.retryAfterS };
      }
      return { kind: "fail", error: error instanceof Error ? error.message : String(error), retryable: true };
    }
  };
}
