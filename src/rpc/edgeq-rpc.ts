import { refusedError } from "../contracts/refusal";
import { EnqueueLinger, type EnqueuedTask, type LingerOptions } from "../contracts/enqueue-linger";
import type { EdgeqEntrypoint, EdgeqService } from "./edgeq-entrypoint";
import type { RpcOutcome } from "./rpc-outcome";

/** The binding's methods: every public method of the entrypoint, each answering an RpcOutcome. */
type Methods = {
  [
    K in keyof EdgeqEntrypoint as EdgeqEntrypoint[K] extends (...args: never[]) => Promise<RpcOutcome<unknown>>
      ? K
      : never
  ]: EdgeqEntrypoint[K];
};

/**
 * The edgeq binding as a caller uses it: each method takes the binding's arguments and resolves to the
 * answer itself, and a refusal throws the one EdgeqError class (`code`, `status`, the HTTP API's message,
 * `instanceof EdgeqError`).
 */
export type EdgeqRpc = {
  [K in keyof Methods]: Methods[K] extends (...args: infer A) => Promise<RpcOutcome<infer T>>
    ? (...args: A) => Promise<T>
    : never;
};

/**
 * Wraps a service binding to edgeq's entrypoint (`EdgeqRpc`): the binding answers refusals as values
 * (RpcOutcome, so that a client's mistake is never logged as the edgeq Worker's crash); this turns them back
 * into a thrown EdgeqError here, in the caller, where `try`/`catch` and a `code` to switch on belong.
 *
 * Single-task `enqueue`s to one queue within `options.lingerMs` (default 5 ms) go in one binding call of up
 * to `options.maxBatch` (default 100) tasks and `options.maxBytes` (default 512 KiB) of JSON, each caller
 * answered with its own task or its own refusal;
 * `{ lingerMs: 0 }` sends each alone (docs/rpc.md, "Coalesced enqueues"). Coalescing spans the calls made
 * through one wrapper (within one request: tested; shared across requests: untested, docs/rpc.md).
 *
 * @example
 * const edgeq = edgeqRpc(env.EDGEQ);
 * try {
 *   await edgeq.complete(id, { lease_token });
 * } catch (error) {
 *   if (error instanceof EdgeqError && error.code === "lease_lost") return; // another holder has it now
 *   throw error;
 * }
 */
export function edgeqRpc(binding: EdgeqService, options: LingerOptions = {}): EdgeqRpc {
  const methods = binding as unknown as Record<string, (...args: unknown[]) => Promise<RpcOutcome<unknown>>>;
  const linger = new EnqueueLinger<unknown, EnqueuedTask>(
    async (queue, tasks) =>
      valueOf(await methods.enqueue!(queue, tasks.length === 1 ? tasks[0] : { tasks })) as { tasks: EnqueuedTask[] },
    options,
  );
  const enqueue = async (queue: unknown, body: unknown) =>
    // A batch, or a call a caller got wrong (no queue name), goes as it is: the binding answers it.
    typeof queue !== "string" || isBatch(body)
      ? valueOf(await methods.enqueue!(queue, body))
      : linger.enqueue(queue, body, undefined);
  return new Proxy({} as EdgeqRpc, {
    get(_target, name) {
      // Not a method: `then` (so that awaiting the wrapper does not call the binding) and symbols.
      if (typeof name !== "string" || name === "then") return undefined;
      if (name === "enqueue") return enqueue;
      return async (...args: unknown[]) => valueOf(await methods[name]!(...args));
    },
  });
}

/** Whether an enqueue body is a batch (`{ tasks: [...] }`, or not one task at all): sent as it is. */
function isBatch(body: unknown): boolean {
  return typeof body !== "object" || body === null || Array.isArray(body) || "tasks" in body;
}

/** An outcome's value, or its refusal thrown as the EdgeqError it was. */
export function valueOf<T>(outcome: RpcOutcome<T>): T {
  if (outcome.ok) return outcome.value;
  throw refusedError(outcome.error);
}
