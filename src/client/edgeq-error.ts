import { isTransientCode, type ClientErrorCode, type ErrorCode } from "../contracts/errors";

/**
 * What a refusal or failure is about: one of the API's error codes (src/contracts/errors.ts, the README's
 * error table), or one the client adds for what never reached an answer (`CLIENT_ERRORS`):
 * - `unreachable`: the request failed in the network (server down or restarting, DNS, refused);
 * - `timeout`: no answer within the client's time limit;
 * - `bad_response`: an answer that is not the API's JSON (a proxy's error page, say).
 */
export type EdgeqErrorCode = ErrorCode | ClientErrorCode;

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

  /**
   * Whether asking again later may succeed: the code's `transient` in the error tables, or a 429 or 5xx
   * of a code this client does not know (a bad request never will).
   */
  get transient(): boolean {
    return isTransientCode(this.code) || this.status === 429 || this.status >= 500;
  }
}
