import { CLAIM_WINDOW_S, CONTESTED_CHECK_MS, CONTESTED_CLAIM_S } from "../contracts/limits";
import type { FencedItem } from "../engine/store";

/** One task handed to a waiter under a provisional lease: when, to which named wait, under which token. */
export interface HandOut {
  at: number;
  waiterId: string | undefined;
  /** May be taken back for another waiting poll once unclaimed for CONTESTED_CLAIM_S: the poll's client
   * could hang up unseen. A poll whose hang-up is reported (`hangUpReported`) is withdrawn instead. */
  contestable: boolean;
  item: FencedItem;
}

const CLAIM_WINDOW_MS = CLAIM_WINDOW_S * 1000;
const CONTESTED_CLAIM_MS = CONTESTED_CLAIM_S * 1000;

/**
 * The provisional leases a coordinator handed to its waiters, kept in memory while their claim window
 * runs, so it can take back what a gone client will never claim: after CONTESTED_CLAIM_S when another
 * poll waits (only hand-outs to polls whose hang-up would go unseen), or at once when the wait they went to
 * is withdrawn. A claim is not reported here — the statement that ends claim windows (endClaimWindows) leaves a claimed
 * lease alone, and a hand-out taken back stays its holder's until another lease takes it, so a live client
 * loses a task only to a poll that actually leased it. Lost with the object (an eviction): the claim window
 * still ends on its own.
 *
 * @example
 * handOuts.record(now, "w-1", leased, true);
 * const contested = handOuts.takeContested(now); // take back what the waiting polls ask for; restore the rest
 */
export class HandOuts {
  /** Oldest first. */
  private list: HandOut[] = [];
  /** When the claim windows of contested hand-outs were last ended (each end is a D1 statement). */
  private tookAt = -Infinity;

  /** Remembers tasks just handed to a waiter under provisional leases. */
  record(
    at: number,
    waiterId: string | undefined,
    rows: Array<{ id: string; leaseToken: string | null }>,
    contestable: boolean,
  ): void {
    for (const r of rows) {
      if (r.leaseToken !== null)
        this.list.push({ at, waiterId, contestable, item: { id: r.id, leaseToken: r.leaseToken } });
    }
  }

  /**
   * The contestable hand-outs unclaimed for CONTESTED_CLAIM_S or more, oldest first, forgotten here (the
   * caller takes back what its waiting polls ask for and `restore`s those it did not look at) — at most once
   * per CONTESTED_CHECK_MS: a busy queue hands out every few milliseconds, and nearly every hand-out is
   * claimed long before it is contested, so taking each back on its own cost a D1 statement (and an alarm)
   * per task; batched, a gone client's task waits up to CONTESTED_CHECK_MS longer.
   */
  takeContested(now: number): HandOut[] {
    this.prune(now);
    if (now < this.tookAt + CONTESTED_CHECK_MS) return [];
    const taken = this.take((h) => h.contestable && h.at + CONTESTED_CLAIM_MS <= now);
    if (taken.length > 0) this.tookAt = now;
    return taken;
  }

  /** Puts back hand-outs `takeContested` gave that endClaimWindows did not look at (beyond what was asked). */
  restore(handOuts: HandOut[]): void {
    if (handOuts.length === 0) return;
    this.list = [...this.list, ...handOuts].sort((a, b) => a.at - b.at);
  }

  /** What was handed to the named wait, forgotten here (its client withdrew: take them back). */
  takeFor(waiterId: string, now: number): FencedItem[] {
    this.prune(now);
    return this.take((h) => h.waiterId === waiterId).map((h) => h.item);
  }

  /** When the oldest contestable hand-out may be taken back (ms), or null when none is kept. */
  nextContestedAt(now: number): number | null {
    this.prune(now);
    const contestable = this.list.filter((h) => h.contestable);
    if (contestable.length === 0) return null;
    return Math.max(contestable[0]!.at + CONTESTED_CLAIM_MS, this.tookAt + CONTESTED_CHECK_MS);
  }

  /** Past the claim window a lease is leasable anyway (the next lease takes it over): nothing left to do.
   * A withdrawal that comes later than that is not racing the answer: its client had it long ago. */
  private prune(now: number): void {
    this.list = this.list.filter((h) => h.at + CLAIM_WINDOW_MS > now);
  }

  private take(match: (h: HandOut) => boolean): HandOut[] {
    const taken = this.list.filter(match);
    this.list = this.list.filter((h) => !match(h));
    return taken;
  }
}
