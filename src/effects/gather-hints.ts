import type { GatherHint } from "../protocols/durable-objects";

/**
 * How long an isolate keeps sending a queue's single-task enqueues to the coordinator that said it gathers
 * them, without hearing from it again. Why 2 s: every gathered answer renews it while the queue stays busy, and
 * a coordinator that stopped gathering (its rate fell under GATHER_FROM_PER_S) says so in its next answer; a
 * lapse of 2 s only bounds how long a quiet isolate's stale hint can route a lone enqueue through the object.
 */
export const GATHER_HINT_MS = 2_000;

/**
 * Per isolate: the queues whose coordinator answered a wake-up (or a gathered enqueue) with "I gather", which
 * partition's it was, and until when. The operation sends a single plain task there instead of writing it
 * (src/operations/gathered-enqueue.ts); every other isolate learns on its own, from its own answers.
 *
 * @example
 * gatherHints.answered("emails", 0, { gather: true });
 * gatherHints.partFor("emails"); // 0 for the next 2 s
 */
export class GatherHints {
  private readonly until = new Map<string, { part: number; until: number }>();

  constructor(private readonly now: () => number = () => Date.now()) {}

  /** The partition whose coordinator gathers `queue`'s single enqueues now, or null: write them here. */
  partFor(queue: string): number | null {
    const hint = this.until.get(queue);
    if (hint === undefined) return null;
    if (this.now() < hint.until) return hint.part;
    this.until.delete(queue);
    return null;
  }

  /** Records a coordinator's answer. */
  answered(queue: string, part: number, answer: GatherHint | undefined): void {
    if (answer?.gather !== true) {
      this.until.delete(queue);
      return;
    }
    // An isolate may see many queues over its life: keep only hints that still hold once there are many.
    // Why 1,000: below it the map is a few tens of KB, and sweeping it on every answer would be for nothing.
    if (this.until.size >= 1_000) for (const [q, h] of this.until) if (this.now() >= h.until) this.until.delete(q);
    this.until.set(queue, { part, until: this.now() + GATHER_HINT_MS });
  }

  /** Forgets `queue`'s hint (its coordinator could not be reached). */
  forget(queue: string): void {
    this.until.delete(queue);
  }
}

/** This isolate's hints. */
export const gatherHints = new GatherHints();
