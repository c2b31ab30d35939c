import { Effects } from "../effects/follow";
import type { Env } from "../env";
import type { ProcessorRegistry } from "../processors/registry";

/**
 * What every operation runs with, whichever entry point called it (HTTP, RPC, SQS): one invocation's view of
 * the world. Built once per request, by `operationContext`.
 */
export interface OperationContext {
  env: Env;
  /** The invocation's clock reading (ms), taken once so every write of one request agrees on time. */
  now: number;
  /** A fresh clock, for work that outlives `now` (long polls, hand-backs after a wait). */
  clock: () => number;
  /** The processors this Worker was built with (createEdgeq); config writes check names against it. */
  processors: ProcessorRegistry;
  /** Where state changes are reported; it performs what follows them (src/effects/follow.ts). */
  effects: Effects;
  /** Keeps background work of this invocation alive (a request's or a Durable Object's `waitUntil`). */
  defer(work: Promise<unknown>): void;
  /** The client's disconnect, where the runtime reports it (a long poll withdraws on it). */
  signal: AbortSignal;
  /** Whether `signal` is known to abort when the client hangs up (`hangUpsReported`, src/http/): a long poll
   * answered after it waited then hands out leases held to their expiry. Absent: not known (false). */
  hangUpReported?: boolean;
}

/** What an entry point knows of its invocation. */
export interface Invocation {
  env: Env;
  processors: ProcessorRegistry;
  /** The invocation's `waitUntil`: what follows a change runs after the answer. */
  waitUntil(work: Promise<unknown>): void;
  /** The clock reading the invocation already took (HTTP takes one per request); default: now. */
  now?: number;
  /** The client's disconnect; default: none (a service binding call has no connection of its own). */
  signal?: AbortSignal;
  /** Whether `signal` is known to abort when the client hangs up; default: not known. */
  hangUpReported?: boolean;
}

/**
 * The operation context of one invocation: its bindings, its clock reading, the Worker's processors, and
 * the effects owner bound to its `waitUntil`. The one builder, for HTTP and RPC alike.
 *
 * @example
 * const op = operationContext({ env, processors, waitUntil: (work) => ctx.waitUntil(work) });
 */
export function operationContext(invocation: Invocation): OperationContext {
  const { env, processors } = invocation;
  const defer = (work: Promise<unknown>) => invocation.waitUntil(work);
  return {
    env,
    now: invocation.now ?? Date.now(),
    clock: () => Date.now(),
    processors,
    effects: new Effects(env, defer),
    defer,
    signal: invocation.signal ?? new AbortController().signal,
    hangUpReported: invocation.hangUpReported ?? false,
  };
}
