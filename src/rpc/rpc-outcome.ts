import { EdgeqError } from "../contracts/errors";
import { refusalOf, type Refusal } from "../contracts/refusal";

/** A refusal as it crosses the binding: the HTTP API's `{ code, message }` and its status. */
export type RpcRefusal = Refusal;

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

/**
 * Runs one binding call: its answer, or an EdgeqError as a refusal. Anything else is a fault of edgeq's
 * own: logged here, once, and answered as the refusal `internal` without its details (as the HTTP API's 500
 * is) — D1 shedding load is `rate_limited`, as over HTTP (429), so the caller backs off and retries.
 */
export async function rpcCall<T>(name: string, run: () => Promise<T>): Promise<RpcOutcome<T>> {
  try {
    return { ok: true, value: await run() };
  } catch (error) {
    const refusal = refusalOf(error);
    if (refusal !== null) return { ok: false, error: refusal };
    console.error(`rpc ${name}: unexpected error`, error);
    return { ok: false, error: refusalOf(new EdgeqError("internal", "internal error"))! };
  }
}
