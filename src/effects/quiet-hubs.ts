import { EVENT_QUIET_MS } from "../contracts/limits";
import type { HubAnswer } from "../protocols/durable-objects";

/** An answer that says whether anyone listens, and may say how long a sender may skip when nobody does (a
 * coordinator's answer about waits for tasks: src/effects/task-waiters.ts); without it, the window given. */
type QuietAnswer = HubAnswer & { quietMs?: number };

/**
 * Per isolate: the queues whose event hub answered a publish with "nobody listens", and until when this
 * isolate skips publishing their events. The skip runs EVENT_QUIET_MS from when the answered publish was
 * *sent* (before the hub could answer), and a hub whose first listener joins holds that listener's
 * "hello" for EVENT_QUIET_MS plus a margin from the join (src/events/event-hub.ts). The join came after the
 * answer, so every skip has run out before the hello: a listener misses nothing after its hello. Both
 * sides measure only durations on their own clocks, so the two machines' clocks never meet.
 *
 * The clock is the real one, not an injected test clock: the hub's wait is real time.
 *
 * @example
 * if (!quiet.skips(queue)) quiet.answered(queue, sentAt, await hub.publish(input));
 */
export class QuietHubs {
  /** queue -> the time (this isolate's Date.now()) its skip ends. */
  private readonly until = new Map<string, number>();

  constructor(
    private readonly windowMs = EVENT_QUIET_MS,
    private readonly now: () => number = () => Date.now(),
  ) {}

  /** Whether this isolate skips publishing `queue`'s events now. */
  skips(queue: string): boolean {
    const end = this.until.get(queue);
    if (end === undefined) return false;
    if (this.now() < end) return true;
    this.until.delete(queue);
    return false;
  }

  /** Records the hub's answer to a publish sent at `sentAt`. */
  answered(queue: string, sentAt: number, answer: QuietAnswer): void {
    if (answer.listening) {
      this.until.delete(queue);
      return;
    }
    this.forgetExpired();
    this.until.set(queue, sentAt + (answer.quietMs ?? this.windowMs));
  }

  /** Sends one publish through `send` unless `queue` is skipped, and records its answer. */
  async publish(queue: string, send: () => Promise<QuietAnswer>): Promise<void> {
    if (this.skips(queue)) return;
    const sentAt = this.now();
    this.answered(queue, sentAt, await send());
  }

  /** Keeps the map to the queues skipped now: an isolate may see many queues over its life. Why from
   * 1,000 entries on: below that the map is a few tens of KB, and sweeping on every answer would walk it
   * for nothing. */
  private forgetExpired(): void {
    if (this.until.size < 1_000) return;
    const now = this.now();
    for (const [queue, end] of this.until) if (end <= now) this.until.delete(queue);
  }
}
