import type { Effects } from "../effects/follow";
import type { Env } from "../env";
import type { ProcessorRegistry } from "../processors/registry";

/**
 * What every operation runs with, whichever entry point called it (HTTP, SQS, a Durable Object): one
 * invocation's view of the world. Built once per request by the entry point.
 */
export interface OperationContext {
  env: Env;
  /** The invocation's clock reading (ms), taken once so every write of one request agrees on time. */
  now: number;
  /** A fresh clock, for work that outlives `now` (long polls, hand-backs after a wait). */
  clock: () => number;
  /** The processors this Worker was built with (src/index.ts); config writes check names against it. */
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
