import { EdgeqError, type EdgeqErrorCode } from "./errors";
import { rateLimitedIfOverloaded } from "./overloaded";

/**
 * A refusal as it crosses a Workers RPC boundary: the HTTP API's `{ code, message }` and its status. Why as
 * data: what crosses of a thrown error is only documented to be its message
 * (developers.cloudflare.com/workers/runtime-apis/rpc/error-handling/), so an EdgeqError thrown out of an RPC
 * method would lose its code. The edgeq binding (src/rpc/rpc-outcome.ts) and a coordinator's gathered enqueues
 * (src/coordinator/gather.ts) answer refusals so, and their callers throw them again with `refusedError`.
 */
export interface Refusal {
  code: EdgeqErrorCode;
  message: string;
  status: number;
}

/**
 * `error` as a refusal — an EdgeqError, or a D1 query refused under load (`rate_limited`) — or null for any
 * other error (a fault of edgeq's own, which the caller logs or throws).
 *
 * @example
 * const refusal = refusalOf(error);
 * if (refusal === null) throw error;
 */
export function refusalOf(error: unknown): Refusal | null {
  const refused = error instanceof EdgeqError ? error : rateLimitedIfOverloaded(error);
  return refused === null ? null : { code: refused.code, message: refused.message, status: refused.status };
}

/** The EdgeqError a refusal was, on the caller's side. */
export function refusedError(refusal: Refusal): EdgeqError {
  return new EdgeqError(refusal.code, refusal.message, { status: refusal.status });
}
