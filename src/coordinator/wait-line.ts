import type { StoredTask } from "../contracts/stored-task";
import { MAX_WAIT_S } from "../contracts/limits";
import type { CoordinatorLease } from "../protocols/durable-objects";

/** One parked long poll. */
export interface Waiter {
  request: CoordinatorLease;
  resolve: (tasks: StoredTask[]) => void;
  reject: (error: unknown) => void;
  timer: ReturnType<typeof setTimeout>;
  /** A lease for this waiter is in flight: its timeout must not answer it meanwhile. */
  busy: boolean;
  /** The wait ran out while a lease was in flight. */
  expired: boolean;
  /** The wait was withdrawn while a lease was in flight: whatever that lease took goes back. */
  withdrawn: boolean;
}

/** How long a withdrawal that found no wait is remembered: a poll overtaken by its own withdrawal (sent
 * after it, arrived first) is answered at once instead of parking. After the longest wait its client has
 * stopped waiting for it anyway. */
const WITHDRAWN_MEMORY_MS = MAX_WAIT_S * 1000;

/**
 * A coordinator's parked long polls, served newest first. Why not first come, first served: a client that
 * hung up is not told apart from a live one (under `wrangler dev` the Worker never hears of it), and it is
 * on average the oldest waiter — a live client polls again as soon as its wait ends or its work is done,
 * while a gone one stays parked until its wait runs out. Served oldest first, each gone poll took a new
 * task in turn (for CLAIM_WINDOW_S each); served newest first, the poll most recently shown to be alive
 * gets it. Which of several live idle workers runs a task does not matter to the queue; none is starved,
 * since an unserved wait ends and its worker polls again, then as the newest.
 *
 * @example
 * line.add(waiter);
 * const next = line.next(); // the newest
 */
export class WaitLine {
  private readonly waiters: Waiter[] = [];
  /** waiterId -> until when (ms) a withdrawal that found nothing is remembered. */
  private readonly withdrawnIds = new Map<string, number>();

  get size(): number {
    return this.waiters.length;
  }

  /** How many tasks the waiting polls ask for in all (each its `max`). */
  wanted(): number {
    return this.waiters.reduce((sum, w) => sum + w.request.max, 0);
  }

  add(waiter: Waiter): void {
    this.waiters.push(waiter);
  }

  /** The waiter to serve next: the newest (see the class comment). */
  next(): Waiter | undefined {
    return this.waiters[this.waiters.length - 1];
  }

  drop(waiter: Waiter): void {
    clearTimeout(waiter.timer);
    const index = this.waiters.indexOf(waiter);
    if (index >= 0) this.waiters.splice(index, 1);
  }

  /** The waits named `waiterId` (one, unless a client reused a name). */
  named(waiterId: string): Waiter[] {
    return this.waiters.filter((w) => w.request.waiterId === waiterId);
  }

  /** Remembers a withdrawal that found no wait, in case its poll is still on the way here. */
  rememberWithdrawn(waiterId: string, now: number): void {
    for (const [id, until] of this.withdrawnIds) if (until <= now) this.withdrawnIds.delete(id);
    this.withdrawnIds.set(waiterId, now + WITHDRAWN_MEMORY_MS);
  }

  /** Whether the poll named `waiterId` was withdrawn before it arrived. */
  wasWithdrawn(waiterId: string | undefined, now: number): boolean {
    if (waiterId === undefined) return false;
    return (this.withdrawnIds.get(waiterId) ?? 0) > now;
  }
}
