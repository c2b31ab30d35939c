import { EVENT_BUFFER_SIZE } from "../contracts/limits";
import type { TaskEvent } from "../contracts/events";

/** What a client resuming after `after` gets: the events it missed, or "resync" when they are gone. */
export type Missed = { events: TaskEvent[] } | { resync: true };

/**
 * The last EVENT_BUFFER_SIZE task events of one queue, in seq order, kept in the event hub's memory.
 * An evicted hub starts empty: a resume across the eviction that missed anything gets "resync"
 * (the seq itself is stored, so it never goes back).
 *
 * @example
 * const buffer = new EventBuffer();
 * buffer.append(event);
 * const missed = buffer.since(41, currentSeq);
 */
export class EventBuffer {
  private readonly events: TaskEvent[] = [];

  constructor(private readonly size = EVENT_BUFFER_SIZE) {}

  /** Trims only once the array holds twice `size`: dropping the oldest on every append moved the whole
   * buffer each time — 13 % of the Worker's CPU while 10,000-task enqueues were published (docs/benchmarks.md,
   * section 3b). Amortised, an append is O(1); `since` still sees only the newest `size`. */
  append(event: TaskEvent): void {
    this.events.push(event);
    if (this.events.length >= 2 * this.size) this.events.splice(0, this.events.length - this.size);
  }

  /** Forgets every event: seqs were taken that nobody heard (src/events/event-hub.ts), so a resume from
   * before them must resync. */
  clear(): void {
    this.events.length = 0;
  }

  /** The events after `after`, given the queue's latest seq `current`. */
  since(after: number, current: number): Missed {
    if (after === current) return { events: [] };
    // A client ahead of the stream saw seqs this hub no longer knows (lost on an eviction before they
    // were stored): it cannot tell what it missed, so it re-reads.
    if (after > current) return { resync: true };
    const kept = this.events.slice(Math.max(0, this.events.length - this.size));
    const first = kept[0];
    // Every seq in (after, current] must still be here.
    if (first === undefined || first.seq > after + 1) return { resync: true };
    return { events: kept.filter((e) => e.seq > after) };
  }
}
