import { EnqueueLinger, DEFAULT_LINGER_MS } from "../contracts/enqueue-linger";
import { EdgeqError } from "../contracts/errors";
import { rateLimitedIfOverloaded } from "../contracts/overloaded";
import type { CoordinatorGather, GatheredOutcome, GatheredTask } from "../protocols/durable-objects";

/**
 * From how many single-task enqueues a second a coordinator gathers them. Why 100: gathering pays only where
 * a task finds company within the linger (5 ms) — a call of one is a row either way, and waits the linger and
 * the hop to this object for nothing. At 100 a second a linger holds on average half a task more: about 60 %
 * of the tasks then go in calls of two or more, which the store packs (docs/design/packs.md: a pack of two
 * already writes fewer rows a task than a row), and the rate at which that saves more than it delays is what
 * the bill measures (docs/benchmarks.md, section 1b, "coalesced by the queue's coordinator"). Below it each
 * enqueue is written by its own Worker, as before.
 */
export const GATHER_FROM_PER_S = 100;

/**
 * Single-task enqueues seen by this coordinator (wake-ups of calls of one, and gathered tasks) over the last
 * second of its clock, as a sliding-window counter: this second's count plus the last second's, weighted by
 * how much of it the window still covers — so a burst straddling a second's turn is counted whole.
 */
export class ArrivalRate {
  private second = -1;
  private current = 0;
  private previous = 0;

  note(now: number): void {
    this.roll(now);
    this.current++;
  }

  /** Whether the last second saw GATHER_FROM_PER_S arrivals. */
  pays(now: number): boolean {
    this.roll(now);
    const covered = 1 - (now % 1000) / 1000;
    return this.current + this.previous * covered >= GATHER_FROM_PER_S;
  }

  private roll(now: number): void {
    const second = Math.floor(now / 1000);
    if (second === this.second) return;
    this.previous = second === this.second + 1 ? this.current : 0;
    this.current = 0;
    this.second = second;
  }
}

/** Enqueues one call of gathered tasks (one task: as a call of one, so a refusal names its fields as then). */
export type GatheredSend = (
  queue: string,
  tasks: Array<CoordinatorGather["task"]>,
) => Promise<{ tasks: GatheredTask[] }>;

/**
 * The single-task enqueues a queue's coordinator gathers: each waits up to DEFAULT_LINGER_MS for others of the
 * queue, then they go as one enqueue call — the client's own linger (src/contracts/enqueue-linger.ts), across
 * every Worker that sends here. Each caller gets its own task's outcome, or its own refusal as data (an error
 * thrown out of a Durable Object's method crosses as its message alone), D1 shedding load included
 * (`rate_limited`); any other fault of the call is thrown, to every caller whose call it was.
 */
export class EnqueueGathering {
  private readonly linger: EnqueueLinger<CoordinatorGather["task"], GatheredTask>;

  constructor(send: GatheredSend) {
    this.linger = new EnqueueLinger((queue, tasks) => send(queue, tasks), { lingerMs: DEFAULT_LINGER_MS });
  }

  async enqueue(input: CoordinatorGather): Promise<GatheredOutcome> {
    try {
      const { tasks } = await this.linger.enqueue(input.queue, input.task, undefined);
      return { task: tasks[0]! };
    } catch (error) {
      const refusal = error instanceof EdgeqError ? error : rateLimitedIfOverloaded(error);
      if (refusal === null) throw error;
      return { error: { code: refusal.code, message: refusal.message, status: refusal.status } };
    }
  }
}
