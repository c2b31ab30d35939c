import type { Hook } from "@hono/zod-openapi";
import { EdgeqError } from "../contracts/errors";
import type { AppEnv } from "./app-env";
import { describeZodError } from "../contracts/describe-zod-error";
import { errorResponse } from "./error-handler";
import { EnqueueBatchBody, NewTaskSchema } from "../contracts/api";

/** Turns every request-validation failure into a 400 `invalid_request` that names the bad field. */
export const validationHook: Hook<unknown, AppEnv, string, unknown> = (result, c) => {
  if (!result.success) {
    return errorResponse(c, new EdgeqError("invalid_request", describeZodError(result.error, result.target)));
  }
};

/**
 * Enqueue's body is one task or `{ tasks: [...] }`. zod explains a failed union against whichever option
 * it found closest — for a bad batch often `Unrecognized key: "tasks"` — so a failure is explained against
 * the option the client meant instead, naming e.g. `tasks[2].priority`.
 */
export const enqueueValidationHook: Hook<unknown, AppEnv, string, unknown> = (result, c) => {
  if (!result.success && result.target === "json") {
    // @hono/zod-validator hands the hook the input as `data`, also when validation failed.
    const data = (result as { data?: unknown }).data;
    const isBatch = typeof data === "object" && data !== null && !Array.isArray(data) && "tasks" in data;
    const meant = (isBatch ? EnqueueBatchBody : NewTaskSchema).safeParse(data);
    if (!meant.success) {
      return errorResponse(c, new EdgeqError("invalid_request", describeZodError(meant.error, result.target)));
    }
  }
  return validationHook(result, c);
};
