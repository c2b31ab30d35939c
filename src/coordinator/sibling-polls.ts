import { MAX_WAIT_S } from "../contracts/limits";
import { coordinatorOf } from "../effects/wake";
import type { Env } from "../env";
import type { CoordinatorLease } from "../protocols/durable-objects";
import { queueRoute } from "../shards/queue-route";

/** How far ahead a coordinator's "I hold polls" reaches its sibling partitions: twice the longest wait, so
 * one announcement covers every poll parked in the next MAX_WAIT_S and a coordinator that keeps polls
 * parked re-announces at most once per MAX_WAIT_S (K − 1 calls each time, K ≤ MAX_PARTITIONS). The cost of
 * reaching too far: a sibling passes arrivals on for up to this long after the last poll left, each a call
 * that finds nobody to serve. */
const ANNOUNCE_SPAN_MS = 2 * MAX_WAIT_S * 1000;

/**
 * Which sibling partitions of this coordinator's queue hold long polls, and whether this one has told its
 * siblings that it does. A long poll on a partitioned queue waits at one partition's coordinator and leases
 * from every partition, but a task's arrival wakes only the coordinator of the partition it landed on; so a
 * coordinator that parks a poll tells its siblings (`watch`), and a sibling that gets arrivals with no poll
 * of its own left to serve passes them on to the partitions that hold polls. Kept in memory: an evicted
 * sibling forgets, and a poll there is then woken by its own partition's arrivals or answers at the end of
 * its wait, as before.
 *
 * @example
 * await siblings.announce(env, request, now); // before parking a poll
 * for (const part of siblings.waiting(now)) wake(part);
 */
export class SiblingPolls {
  /** sibling partition -> until when (ms) it said it holds polls */
  private readonly until = new Map<number, number>();
  /** Until when this coordinator's own announcement reaches. */
  private announcedUntil = 0;

  /** A sibling holds polls until `until` (ms). */
  note(part: number, until: number): void {
    this.until.set(part, Math.max(until, this.until.get(part) ?? 0));
  }

  /** The siblings that hold polls now. */
  waiting(now: number): number[] {
    for (const [part, until] of this.until) if (until <= now) this.until.delete(part);
    return [...this.until.keys()];
  }

  /**
   * Tells the coordinators of the queue's other partitions that a poll parks here (`watch`), unless this
   * coordinator's last announcement still covers its wait; nothing on an unpartitioned queue.
   */
  async announce(env: Env, request: CoordinatorLease, now: number): Promise<void> {
    if (!this.mustAnnounce(now, request.waitMs)) return;
    const route = await queueRoute(env, request.queue, now);
    if (route.parts.length < 2) return;
    const until = this.announced(now);
    const { queue, part: watcher } = request;
    await Promise.all(
      route.parts
        .filter((p) => p.part !== watcher)
        .map((p) => coordinatorOf(env, queue, p.part).watch({ queue, part: p.part, watcher, until })),
    );
  }

  /** Whether a poll parked now for `waitMs` outlasts this coordinator's last announcement. */
  mustAnnounce(now: number, waitMs: number): boolean {
    return now + waitMs > this.announcedUntil;
  }

  /** Records an announcement made now; returns the time it reaches to. */
  announced(now: number): number {
    this.announcedUntil = now + ANNOUNCE_SPAN_MS;
    return this.announcedUntil;
  }
}
