import { EdgeqError, type EdgeqErrorCode } from "../contracts/errors";
import { rateLimitedIfOverloaded } from "../contracts/overloaded";

/** A refusal as it crosses the binding: the HTTP API's `{ code, message }` and its status. */
export interface RpcRefusal {
  code: EdgeqErrorCode;
  message: string;
  status: number;
}

/**
 * What every method of the edgeq binding resolves to: the HTTP API's answer, or its refusal as data.
 *
 * Why not a thrown error: workerd reports an exception thrown out of an RPC method as the callee's own
 * uncaught error (`✘ [ERROR] Uncaught Error: …` under wrangler dev, an invocation with outcome `exception`
 * in production logs), so every client mistake — a stale lease token, a bad priority — looked like a crash
 * of the edgeq Worker; and what crosses of a thrown error is only documented to be its message
 * (developers.cloudflare.com/workers/runtime-apis/rpc/error-handling/). A refusal answered as a value is
 * neither: the caller switches on `error.code`. `edgeqRpc(binding)` (src/rpc/edgeq-rpc.ts) turns it back
 * into a thrown EdgeqError on the caller's side, where a throw belongs.
 */
export type RpcOutcome<T> = { ok: true; value: T } | { ok: false; error: RpcRefusal };

function refusal(error: EdgeqError): { ok: false; error: RpcRefusal } {
  return { ok: false, error: { code: error.code, message: error.message, status: error.status } };
}

/**
 * Runs one binding call: its answer, or an EdgeqError as a refusal. Anything else is a fault of edgeq's
 * own: logged here, once, and answered as the refusal `internal` without its details (as the HTTP API's 500
 * is) — D1 shedding load is `rate_limited`, as over HTTP (429), so the caller backs off and retries.
 */
export async function rpcCall<T>(name: string, run: () => Promise<T>): Promise<RpcOutcome<T>> {
  try {
    return { ok: true, value: await run() };
  } catch (error) {
    if (error instanceof EdgeqError) return refusal(error);
    const limited = rateLimitedIfOverloaded(error);
    if (limited !== null) return refusal(limited);
    console.error(`rpc ${name}: unexpected error`, error);
    return refusal(new EdgeqError("internal", "internal error"));
  }
}
