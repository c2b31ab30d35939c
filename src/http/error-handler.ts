import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { EdgeqError, type EdgeqErrorCode } from "../contracts/errors";
import { rateLimitedIfOverloaded } from "../contracts/overloaded";

/** The one error body: `{ "error": { "code", "message" } }`. */
export function errorBody(code: EdgeqErrorCode, message: string) {
  return { error: { code, message } };
}

/** An EdgeqError as the API answers it: its status (its code's row in the error table) and the one body. */
export function errorResponse(c: Context, error: EdgeqError, headers?: Record<string, string>): Response {
  return c.json(errorBody(error.code, error.message), error.status as ContentfulStatusCode, headers);
}

/**
 * The one `onError`: known errors keep their code; Hono's own HTTP errors (malformed JSON, body limit,
 * media type) are translated; anything else is a 500 whose details go to the log, never to the client.
 */
export function onError(error: unknown, c: Context): Response {
  if (error instanceof EdgeqError) {
    // A task between shards is back in a moment: tell the client when to retry.
    if (error.code === "unauthorized") return errorResponse(c, error, { "WWW-Authenticate": 'Bearer realm="edgeq"' });
    return errorResponse(c, error, error.code === "task_moving" ? { "Retry-After": "1" } : undefined);
  }
  if (error instanceof HTTPException) {
    const status = error.status;
    if (status === 413)
      return errorResponse(c, new EdgeqError("payload_too_large", error.message || "request body too large"));
    if (status === 415) {
      return errorResponse(
        c,
        new EdgeqError("unsupported_media_type", "send the body as JSON with Content-Type: application/json"),
      );
    }
    if (status === 401) return errorResponse(c, new EdgeqError("unauthorized", error.message || "unauthorized"));
    if (status >= 400 && status < 500) {
      return errorResponse(c, new EdgeqError("invalid_request", error.message || "invalid request"));
    }
  }
  const limited = rateLimitedIfOverloaded(error);
  if (limited !== null) return errorResponse(c, limited, { "Retry-After": "1" });
  console.error("unhandled error", c.req.method, c.req.path, error);
  return errorResponse(c, new EdgeqError("internal", "internal error"));
}
