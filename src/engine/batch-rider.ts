import type { SQL } from "drizzle-orm";

/**
 * Statements that ride a write's batch after the write's own, in its transaction: the next lease of an ack that
 * carries one (src/engine/hybrid/hybrid-store.ts `ackThenLease`), one D1 call for both. They apply only with
 * the write: a batch that fails (a pack write's guard) fails them too, and `results` stays unset.
 */
export interface BatchRider {
  statements: SQL[];
  /** Their results, in order, once the batch they rode committed. */
  results?: unknown[][];
}

/** A batch's statements with `rider`'s after `own`. */
export function withRider(own: SQL[], rider: BatchRider | undefined): SQL[] {
  return rider ? [...own, ...rider.statements] : own;
}

/** Hands `rider` its results (those after the first `own` of the batch's), and answers the write's own. */
export function ownResults<T>(results: T[], own: number, rider: BatchRider | undefined): T[] {
  if (rider) rider.results = results.slice(own) as unknown[][];
  return results.slice(0, own);
}
