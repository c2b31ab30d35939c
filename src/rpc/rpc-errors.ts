import { EdgeqError, isErrorCode, type ErrorCode } from "../contracts/errors";
import { rateLimitedIfOverloaded } from "../contracts/overloaded";

/**
 * What crosses a Workers RPC call of a thrown error: Cloudflare documents only the message and a standard
 * prototype's name (developers.cloudflare.com/workers/runtime-apis/rpc/error-handling/), and the caller
 * always gets a plain `Error`, never the thrower's class. The workerd this repository runs also keeps
 * `name` and own properties (test/rpc/refusals.test.ts), but a caller cannot count on what the docs do not
 * promise. So the binding throws an Error that says its code three ways — its message starts with it
 * (`edgeq invalid_request: tasks[0].priority: …`), its `name` is "EdgeqError", its own `code` and `status`
 * carry it — and `edgeqErrorOf` turns what the caller caught back into the one EdgeqError class, from the
 * properties when they crossed and from the message otherwise: the same codes, statuses and messages as
 * the HTTP API's `{ "error": { "code", "message" } }`.
 */

const PREFIX = "edgeq ";

/** The Error the binding throws for an EdgeqError. */
export function toRpcError(error: EdgeqError): Error {
  return Object.assign(new Error(`${PREFIX}${error.code}: ${error.message}`), {
    name: "EdgeqError",
    code: error.code,
    status: error.status,
  });
}

/**
 * The EdgeqError a call to the edgeq binding was refused with — `code`, `status` and the HTTP API's
 * message, `instanceof EdgeqError` — or null for any other error (a network failure of the binding, a
 * bug of the caller's own).
 *
 * @example
 * try {
 *   await env.EDGEQ.complete(id, { lease_token });
 * } catch (error) {
 *   if (edgeqErrorOf(error)?.code === "lease_lost") return; // another holder has it now
 *   throw error;
 * }
 */
export function edgeqErrorOf(error: unknown): EdgeqError | null {
  if (error instanceof EdgeqError) return error;
  const coded = rpcErrorOf(error);
  return coded === null ? null : new EdgeqError(coded.code, coded.message, { cause: error });
}

/**
 * The code and message of an error thrown by the edgeq binding, or null for any other error (read from
 * its message, which always crosses). `edgeqErrorOf` answers the whole EdgeqError.
 */
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
