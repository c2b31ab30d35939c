import { EnqueueLinger, DEFAULT_LINGER_MS } from "../contracts/enqueue-linger";
import { refusalOf } from "../contracts/refusal";
import type { CoordinatorGather, GatheredOutcome, GatheredTask } from "../protocols/durable-objects";

/**
 * From how many single-task enqueues a second a coordinator gathers them. Why 100: gathering pays only where
 * a task finds company within the linger (5 ms) — a call of one is a row either way, and waits the linger and
 * the hop to this object for nothing. At 100 a second a linger holds on average half a task more: were the
 * arrivals random (Poisson), e^-0.5 = 61 % of calls would carry one task and the other 59 % of tasks would go in
 * calls of two or more, which the store packs (docs/design/packs.md: a pack of two already writes fewer rows a
 * task than a row). What a busy queue's producers save is measured in the bill's 1-task producer rows
 * (docs/operations.md, "Producers that enqueue one task per call"). Below it each enqueue is written by its own
 * Worker, as before.
 */
export const GATHER_FROM_PER_S = 100;

/** How many gathered calls in a row tell whether gathering finds company, and the mean size under which it
 * does not: then it stops for GATHER_BACKOFF_MS. Why: a fast producer that waits for each answer before its
 * next enqueue (one request handler in a loop) makes the rate alone, yet each of its tasks comes alone — a call
 * of one, which pays the linger, the hop and a second object request for nothing. 20 calls: enough that a few
 * lone calls of a busy queue do not stop it; 1.5: at least every other call carries two tasks. */
export const GATHER_SAMPLE_CALLS = 20;
export const GATHER_MIN_MEAN = 1.5;
/** How long a coordinator whose gathered calls came alone gathers no more (then it tries again). Why 10 s: a
 * lone fast producer then pays the probe — 20 calls of one, each waiting the linger and the hop — once in 10 s. */
export const GATHER_BACKOFF_MS = 10_000;

/**
 * Whether gathering pays: single-task enqueues seen by this coordinator (wake-ups of calls of one, and gathered
 * tasks) over the last second of its clock — a sliding-window counter: this second's count plus the last
 * second's, weighted by how much of it the window still covers, so a burst straddling a second's turn is counted
 * whole — and the sizes of the calls it gathered lately.
 */
export class GatherGauge {
  private second = -1;
  private current = 0;
  private previous = 0;
  /** The gathered calls since the last sample, and the tasks they carried. */
  private calls = 0;
  private tasks = 0;
  private pausedUntil = 0;

  note(now: number): void {
    this.roll(now);
    this.current++;
  }

  /** A gathered call of `size` tasks went out. */
  sent(size: number, now: number): void {
    this.calls++;
    this.tasks += size;
    if (this.calls < GATHER_SAMPLE_CALLS) return;
    if (this.tasks / this.calls < GATHER_MIN_MEAN) this.pausedUntil = now + GATHER_BACKOFF_MS;
    this.calls = 0;
    this.tasks = 0;
  }

  /** Whether the last second saw GATHER_FROM_PER_S arrivals, and gathering lately found them company. */
  pays(now: number): boolean {
    this.roll(now);
    if (now < this.pausedUntil) return false;
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

  constructor(send: GatheredSend, sent: (size: number) => void) {
    this.linger = new EnqueueLinger(
      (queue, tasks) => {
        sent(tasks.length);
        return send(queue, tasks);
      },
      { lingerMs: DEFAULT_LINGER_MS },
    );
  }

  async enqueue(input: CoordinatorGather): Promise<GatheredOutcome> {
    try {
      const { tasks } = await this.linger.enqueue(input.queue, input.task, undefined);
      return { task: tasks[0]! };
    } catch (error) {
      const refusal = refusalOf(error);
      if (refusal === null) throw error;
      return { error: refusal };
    }
  }
}
