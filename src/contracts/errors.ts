/**
 * One row of an error table. `transient`: whether asking again later may succeed — the server overloaded,
 * failing or briefly unable to serve — rather than never (a bad request, a lost lease). Clients read it as
 * `error.transient` (edgeq/client); the Node worker and `edgeq watch` retry through them.
 */
interface ErrorRow {
  code: string;
  status: number;
  transient: boolean;
  description: string;
}

/**
 * The one error model. Every failure a caller can act on is an `EdgeqError` with a code from `ERRORS`, the
 * one table of codes: an error's HTTP status (EdgeqError below, answered by src/http/error-handler.ts) and
 * the OpenAPI error responses (src/http/route-helpers.ts) come from it, and test/http/error-table.test.ts fails when
 * docs/errors.md's table says anything else. Descriptions are written for API users (Markdown, no `|`).
 *
 * @example
 * throw new EdgeqError("lease_lost", `task ${id}: the lease token is stale or the lease expired`);
 */
export const ERRORS = [
  {
    code: "invalid_request",
    status: 400,
    transient: false,
    description:
      "a field is missing, malformed or unknown (the message names it); malformed JSON; a body that is not UTF-8",
  },
  { code: "unauthorized", status: 401, transient: false, description: "no bearer token, or a wrong one" },
  {
    code: "not_found",
    status: 404,
    transient: false,
    description: "no such task, artifact, schedule or route; a queue's placement or move: no such queue",
  },
  {
    code: "method_not_allowed",
    status: 405,
    transient: false,
    description: "the path exists but not with this method; `Allow` lists the methods it takes",
  },
  {
    code: "lease_lost",
    status: 409,
    transient: false,
    description: "the lease token is wrong or superseded, or the lease expired",
  },
  {
    code: "invalid_transition",
    status: 409,
    transient: false,
    description: "the task's state does not allow it (e.g. cancel a completed task)",
  },
  {
    code: "task_cancelled",
    status: 409,
    transient: false,
    description: "a cancel was requested: the holder's lease is over, the task is cancelled",
  },
  {
    code: "dedupe_conflict",
    status: 409,
    transient: false,
    description: "retrying a task whose dedupe key a live task now holds",
  },
  {
    code: "id_in_other_queue",
    status: 409,
    transient: false,
    description:
      "an enqueued task's `id` is a task of another queue (ids are unique across queues); nothing was enqueued",
  },
  {
    code: "move_conflict",
    status: 409,
    transient: false,
    description: "the queue is already being moved, or already on that shard",
  },
  {
    code: "payload_too_large",
    status: 413,
    transient: false,
    description: "payload, result, task count or body over its limit (the message says which)",
  },
  {
    code: "unsupported_media_type",
    status: 415,
    transient: false,
    description: "a body not sent as `Content-Type: application/json` in UTF-8 (another charset, a `+json` type)",
  },
  { code: "rate_limited", status: 429, transient: true, description: "D1 is overloaded; retry after `Retry-After`" },
  {
    code: "internal",
    status: 500,
    transient: true,
    description: "an unexpected error (details go to the Worker's log, never to the client)",
  },
  {
    code: "not_configured",
    status: 503,
    transient: true,
    description: "production without `EDGEQ_TOKEN` refuses to serve",
  },
  {
    code: "shard_unavailable",
    status: 503,
    transient: true,
    description: "the queue's shard is in the directory but not bound to this Worker (wrangler.toml)",
  },
  {
    code: "task_moving",
    status: 503,
    transient: true,
    description: "the task is between two shards for a moment (a queue move); retry after `Retry-After`",
  },
] as const satisfies ReadonlyArray<ErrorRow>;

export type ErrorCode = (typeof ERRORS)[number]["code"];

const STATUS_BY_CODE: ReadonlyMap<string, number> = new Map(ERRORS.map((row) => [row.code, row.status]));

/**
 * Whether `code` is one of the API's (a row of ERRORS).
 *
 * @example
 * isErrorCode("lease_lost"); // true
 * isErrorCode("timeout"); // false: the client's own (CLIENT_ERRORS)
 */
export function isErrorCode(code: string): code is ErrorCode {
  return STATUS_BY_CODE.has(code);
}

/**
 * The codes a client adds (edgeq/client, docs/sdk.md) for a request that got no answer of the API's: its
 * status is 0, or the HTTP status of an answer that was not the API's JSON. No server sends them.
 */
export const CLIENT_ERRORS = [
  {
    code: "unreachable",
    transient: true,
    description: "the request failed in the network (server down or restarting, DNS, refused)",
  },
  { code: "timeout", transient: true, description: "no answer within the client's time limit" },
  {
    code: "bad_response",
    transient: false,
    description: "an answer that is not the API's JSON (a proxy's error page, say)",
  },
] as const satisfies ReadonlyArray<Omit<ErrorRow, "status">>;

export type ClientErrorCode = (typeof CLIENT_ERRORS)[number]["code"];

const TRANSIENT_CODES: ReadonlySet<string> = new Set(
  [...ERRORS, ...CLIENT_ERRORS].filter((row) => row.transient).map((row) => row.code),
);

/**
 * Whether asking again later may succeed after an error of `code`: its row's `transient` (false for a code
 * in neither table).
 *
 * @example
 * isTransientCode("task_moving"); // true
 * isTransientCode("lease_lost"); // false
 */
export function isTransientCode(code: string): boolean {
  return TRANSIENT_CODES.has(code);
}

/**
 * What a refusal or failure is about: one of the API's error codes (ERRORS, docs/errors.md's table), or
 * one the client adds for what never reached an answer (CLIENT_ERRORS).
 */
export type EdgeqErrorCode = ErrorCode | ClientErrorCode;

/**
 * The one error class, thrown by the Worker's code and by the client (edgeq/client and edgeq/node
 * re-export it), so `instanceof EdgeqError` holds on either side. `status` is the HTTP status: the code's
 * row in ERRORS unless `options.status` says otherwise, as the client does with the status it got — 0 when
 * there was no answer (and for the client's own codes).
 *
 * @example
 * throw new EdgeqError("lease_lost", `task ${id}: the lease token is stale or the lease expired`);
 * // In the client, an answer's code and status:
 * throw new EdgeqError(body.error.code, body.error.message, { status: response.status });
 * // Catching, on either side:
 * if (error instanceof EdgeqError && error.code === "lease_lost") return; // someone else holds it now
 */
export class EdgeqError extends Error {
  override readonly name = "EdgeqError";
  readonly status: number;
  constructor(
    readonly code: EdgeqErrorCode,
    message: string,
    options?: { status?: number; cause?: unknown },
  ) {
    super(message, options);
    this.status = options?.status ?? STATUS_BY_CODE.get(code) ?? 0;
  }

  /**
   * Whether asking again later may succeed: the code's `transient` in the error tables, or any 429 or 5xx
   * (a newer server's code, a proxy's error page); a bad request never will.
   */
  get transient(): boolean {
    return isTransientCode(this.code) || this.status === 429 || this.status >= 500;
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
