import { CLAIM_WINDOW_S, CONTESTED_CHECK_MS, CONTESTED_CLAIM_S } from "../contracts/limits";
import type { FencedItem } from "../engine/ack";

/** Provisional leases handed to one waiter: when, to which named wait, which tasks under which tokens. */
interface HandOut {
  at: number;
  waiterId: string | undefined;
  items: FencedItem[];
}

const CLAIM_WINDOW_MS = CLAIM_WINDOW_S * 1000;
const CONTESTED_CLAIM_MS = CONTESTED_CLAIM_S * 1000;

/**
 * The provisional leases a coordinator handed to its waiters, kept in memory while their claim window
 * runs, so it can take back what a gone client will never claim: after CONTESTED_CLAIM_S when another
 * poll waits, or at once when the wait they went to is withdrawn. A claim is not reported here — the
 * take-back statement (revokeUnclaimed) leaves a claimed lease alone, so none is ever taken from a client
 * that claimed it. Lost with the object (an eviction): the claim window still voids the leases.
 *
 * @example
 * handOuts.record(now, "w-1", leased);
 * const contested = handOuts.takeContested(now); // revoke these, then serve the waiting polls
 */
export class HandOuts {
  private list: HandOut[] = [];
  /** When the last take-back of contested hand-outs took any (each take-back is a D1 statement). */
  private tookAt = -Infinity;

  /** Remembers tasks just handed to a waiter under provisional leases. */
  record(at: number, waiterId: string | undefined, rows: Array<{ id: string; leaseToken: string | null }>): void {
    const items = rows.flatMap((r) => (r.leaseToken === null ? [] : [{ id: r.id, leaseToken: r.leaseToken }]));
    if (items.length > 0) this.list.push({ at, waiterId, items });
  }

  /**
   * The hand-outs unclaimed for CONTESTED_CLAIM_S or more, forgotten here (the caller takes them back) —
   * at most once per CONTESTED_CHECK_MS: a busy queue hands out every few milliseconds, and nearly every
   * hand-out is claimed long before it is contested, so taking each back on its own cost a D1 statement
   * (and an alarm) per task; batched, a gone client's task waits up to CONTESTED_CHECK_MS longer.
   */
  takeContested(now: number): FencedItem[] {
    this.prune(now);
    if (now < this.tookAt + CONTESTED_CHECK_MS) return [];
    const taken = this.take((h) => h.at + CONTESTED_CLAIM_MS <= now);
    if (taken.length > 0) this.tookAt = now;
    return taken;
  }

  /** What was handed to the named wait, forgotten here (its client withdrew: take them back). */
  takeFor(waiterId: string, now: number): FencedItem[] {
    this.prune(now);
    return this.take((h) => h.waiterId === waiterId);
  }

  /** When the oldest kept hand-out may be taken back as contested (ms), or null when none is kept. */
  nextContestedAt(now: number): number | null {
    this.prune(now);
    if (this.list.length === 0) return null;
    return Math.max(Math.min(...this.list.map((h) => h.at)) + CONTESTED_CLAIM_MS, this.tookAt + CONTESTED_CHECK_MS);
  }

  /** Past the claim window a lease is void anyway (the next lease takes it over): nothing left to do. */
  private prune(now: number): void {
    this.list = this.list.filter((h) => h.at + CLAIM_WINDOW_MS > now);
  }

  private take(match: (h: HandOut) => boolean): FencedItem[] {
    const taken = this.list.filter(match);
    this.list = this.list.filter((h) => !match(h));
    return taken.flatMap((h) => h.items);
  }
}
