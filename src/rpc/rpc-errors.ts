import { EdgeqError, isErrorCode, type ErrorCode } from "../contracts/errors";
import { rateLimitedIfOverloaded } from "../contracts/overloaded";

/**
 * Errors across a Workers RPC call keep only their message (the runtime drops own properties and custom
 * classes: developers.cloudflare.com/workers/runtime-apis/rpc/error-handling/). So the binding throws an
 * Error whose message starts with its code, `edgeq invalid_request: tasks[0].priority: …`, and
 * `rpcErrorOf` reads it back on the caller's side — a code a caller can switch on, the same codes and
 * messages as the HTTP API's `{ "error": { "code", "message" } }`.
 */

const PREFIX = "edgeq ";

/** The Error the binding throws for an EdgeqError. */
export function toRpcError(error: EdgeqError): Error {
  return new Error(`${PREFIX}${error.code}: ${error.message}`);
}

/** The code and message of an error thrown by the edgeq binding, or null for any other error. */
export function rpcErrorOf(error: unknown): { code: ErrorCode; message: string } | null {
  if (!(error instanceof Error) || !error.message.startsWith(PREFIX)) return null;
  const rest = error.message.slice(PREFIX.length);
  const colon = rest.indexOf(": ");
  if (colon < 0) return null;
  const code = rest.slice(0, colon);
  if (!isErrorCode(code)) return null;
  return { code, message: rest.slice(colon + 2) };
}

/**
 * Runs one binding call: an EdgeqError becomes the coded Error above; anything else is logged and answered
 * as `internal`, without its details (as the HTTP API's 500 is).
 */
export async function rpcCall<T>(name: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof EdgeqError) throw toRpcError(error);
    // D1 shedding load: the caller should back off and retry, as over HTTP (429).
    const limited = rateLimitedIfOverloaded(error);
    if (limited !== null) throw toRpcError(limited);
    console.error(`rpc ${name}: unexpected error`, error);
    throw toRpcError(new EdgeqError("internal", "internal error"));
  }
}
