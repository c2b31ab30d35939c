import type { ErrorCode } from "../contracts/errors";

/**
 * What a refusal or failure is about: one of the API's error codes (src/contracts/errors.ts, the README's
 * error table), or one the client adds for what never reached an answer:
 * - `unreachable`: the request failed in the network (server down or restarting, DNS, refused);
 * - `timeout`: no answer within the client's time limit;
 * - `bad_response`: an answer that is not the API's JSON (a proxy's error page, say).
 */
export type EdgeqErrorCode = ErrorCode | "unreachable" | "timeout" | "bad_response";

/** Codes worth asking again for: the server unreachable, slow, overloaded or briefly unable to serve. */
const TRANSIENT = new Set<EdgeqErrorCode>([
  "unreachable",
  "timeout",
  "rate_limited",
  "internal",
  "not_configured",
  "shard_unavailable",
  "task_moving",
]);

/**
 * A refusal from the edgeq API (`{ error: { code, message } }`), or a request that got no usable answer.
 * `status` is the HTTP status, 0 when there was no answer.
 *
 * @example
 * try {
 *   await client.complete(task.id, { lease_token: task.lease_token });
 * } catch (error) {
 *   if (error instanceof EdgeqError && error.code === "lease_lost") return; // someone else holds it now
 *   throw error;
 * }
 */
export class EdgeqError extends Error {
  override readonly name = "EdgeqError";
  constructor(
    readonly code: EdgeqErrorCode,
    readonly status: number,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }

  /** Whether asking again later may succeed: no answer, 429, or a 5xx (a bad request never will). */
  get transient(): boolean {
    return TRANSIENT.has(this.code) || this.status === 429 || this.status >= 500;
  }
}
