/**
 * The one error model. Every failure a caller can act on is an `EdgeqError` with a code from `ERRORS`, the
 * one table of codes: the HTTP layer derives its code→status mapping (src/http/error-handler.ts) and the
 * OpenAPI error responses (src/http/route-helpers.ts) from it, and test/http/error-table.test.ts fails when
 * the README's error table says anything else. Descriptions are written for API users (Markdown, no `|`).
 *
 * @example
 * throw new EdgeqError("lease_lost", `task ${id}: the lease token is stale or the lease expired`);
 */
export const ERRORS = [
  {
    code: "invalid_request",
    status: 400,
    description:
      "a field is missing, malformed or unknown (the message names it); malformed JSON; a body that is not UTF-8",
  },
  { code: "unauthorized", status: 401, description: "no bearer token, or a wrong one" },
  {
    code: "not_found",
    status: 404,
    description: "no such task, artifact, schedule or route; a queue's placement or move: no such queue",
  },
  {
    code: "method_not_allowed",
    status: 405,
    description: "the path exists but not with this method; `Allow` lists the methods it takes",
  },
  { code: "lease_lost", status: 409, description: "the lease token is wrong or superseded, or the lease expired" },
  {
    code: "invalid_transition",
    status: 409,
    description: "the task's state does not allow it (e.g. cancel a completed task)",
  },
  {
    code: "task_cancelled",
    status: 409,
    description: "a cancel was requested: the holder's lease is over, the task is cancelled",
  },
  { code: "dedupe_conflict", status: 409, description: "retrying a task whose dedupe key a live task now holds" },
  {
    code: "id_in_other_queue",
    status: 409,
    description:
      "an enqueued task's `id` is a task of another queue (ids are unique across queues); nothing was enqueued",
  },
  { code: "move_conflict", status: 409, description: "the queue is already being moved, or already on that shard" },
  {
    code: "payload_too_large",
    status: 413,
    description: "payload, result, task count or body over its limit (the message says which)",
  },
  {
    code: "unsupported_media_type",
    status: 415,
    description: "a body not sent as `Content-Type: application/json` in UTF-8 (another charset, a `+json` type)",
  },
  { code: "rate_limited", status: 429, description: "D1 is overloaded; retry after `Retry-After`" },
  {
    code: "internal",
    status: 500,
    description: "an unexpected error (details go to the Worker's log, never to the client)",
  },
  { code: "not_configured", status: 503, description: "production without `EDGEQ_TOKEN` refuses to serve" },
  {
    code: "shard_unavailable",
    status: 503,
    description: "the queue's shard is in the directory but not bound to this Worker (wrangler.toml)",
  },
  {
    code: "task_moving",
    status: 503,
    description: "the task is between two shards for a moment (a queue move); retry after `Retry-After`",
  },
] as const satisfies ReadonlyArray<{ code: string; status: number; description: string }>;

export type ErrorCode = (typeof ERRORS)[number]["code"];

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

/** A holder's write found the task ended `cancelled`: a cancel had been requested, so it must stop. */
export class TaskCancelledError extends EdgeqError {
  constructor(taskId: string) {
    super("task_cancelled", `task ${taskId}: a cancel was requested; the task is now cancelled`);
  }
}
