/**
 * The one error model. Every failure a caller can act on is an `EdgeqError` with a code from
 * `ERROR_CODES`; the HTTP layer maps codes to statuses in one place (src/http/error-handler.ts).
 *
 * @example
 * throw new EdgeqError("lease_lost", `task ${id}: the lease token is stale or the lease expired`);
 */
export const ERROR_CODES = [
  "invalid_request", // 400: a field is missing or malformed; the message names it
  "unauthorized", // 401: missing or wrong bearer token
  "not_found", // 404: no such task, queue, route or artifact
  "lease_lost", // 409: the lease token is wrong or stale, or the lease expired
  "invalid_transition", // 409: the task is not in a state that allows this operation
  "task_cancelled", // 409: a cancel was requested; the holder's lease is over
  "dedupe_conflict", // 409: a live task already holds this dedupe key
  "payload_too_large", // 413: a payload or request body over its documented limit
  "unsupported_media_type", // 415: the body is not JSON
  "rate_limited", // 429: too many requests, or D1 is overloaded (retry after Retry-After)
  "not_configured", // 503: production without EDGEQ_TOKEN refuses to serve
  "internal", // 500: an unexpected error; details are logged, never returned
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

export class EdgeqError extends Error {
  override readonly name = "EdgeqError";
  constructor(
    readonly code: ErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/** A write by a lease holder matched no row: the token is wrong or stale, or the lease expired. */
export class LeaseLostError extends EdgeqError {
  constructor(taskId: string) {
    super("lease_lost", `task ${taskId}: the lease token is not current (wrong, superseded or expired)`);
  }
}

export class NotFoundError extends EdgeqError {
  constructor(what: string) {
    super("not_found", `${what} not found`);
  }
}
