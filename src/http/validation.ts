import type { Hook } from "@hono/zod-openapi";
import { EdgeqError } from "../contracts/errors";
import type { AppEnv } from "./app-env";
import { describeZodError } from "../contracts/describe-zod-error";
import { errorResponse } from "./error-handler";

/** Turns every request-validation failure into a 400 `invalid_request` that names the bad field. */
export const validationHook: Hook<unknown, AppEnv, string, unknown> = (result, c) => {
  if (!result.success) {
    return errorResponse(c, new EdgeqError("invalid_request", describeZodError(result.error, result.target)));
  }
};
