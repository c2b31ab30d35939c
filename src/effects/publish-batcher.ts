import type { PublishedEvent } from "../contracts/events";

/**
 * How long events with no wake-up (a lease's, a completion's) wait in this isolate for company before one
 * call to the queue's coordinator carries them all. Why 10 ms: under load, requests land every few
 * milliseconds, so a burn-down's 16 workers publish in a handful of calls instead of one per lease and
 * one per ack (each call to the coordinator cost 25-30 % of the burn-down's throughput under `wrangler
 * dev`, `npm run bench -- --only http-profile`, 2026-11-23); and a dashboard does not see 10 ms.
 */
export const PUBLISH_COALESCE_MS = 10;

/** Sends one queue's events to its coordinator, in order. */
export type SendEvents = (queue: string, events: PublishedEvent[]) => Promise<void>;

/**
 * Collects events per queue for PUBLISH_COALESCE_MS and sends each queue's as one call. Order within this
 * isolate is kept: a batch goes in arrival order, and a call that must go now (a wake-up) takes what is
 * waiting for its queue first (`take`) and sends it ahead of its own events.
 *
 * The call that opens a batch gets a promise settled once the batch is sent: its request hands it to
 * `waitUntil`, which keeps the isolate (and the timer, which runs in that request's context) alive until
 * then. Calls that join an open batch get a resolved promise: their events ride on the opener's call.
 *
 * @example
 * const batcher = new PublishBatcher((queue, events) => coordinatorOf(env, queue).publish({ queue, events: groupEvents(events) }));
 * ctx.waitUntil(batcher.add("emails", [{ kind: "leased", id }]));
 */
export class PublishBatcher {
  private readonly waiting = new Map<string, PublishedEvent[]>();

  constructor(
    private readonly send: SendEvents,
    private readonly delayMs = PUBLISH_COALESCE_MS,
  ) {}

  /** Adds events for `queue` to its open batch, or opens one (see the class comment for the promise). */
  add(queue: string, events: PublishedEvent[]): Promise<void> {
    const open = this.waiting.get(queue);
    if (open) {
      open.push(...events);
      return Promise.resolve();
    }
    const batch = [...events];
    this.waiting.set(queue, batch);
    return new Promise<void>((resolve) => setTimeout(resolve, this.delayMs)).then(() => {
      if (this.waiting.get(queue) === batch) this.waiting.delete(queue);
      // Empty when a wake-up took the events meanwhile.
      return batch.length > 0 ? this.send(queue, batch.splice(0)) : undefined;
    });
  }

  /** Takes the events waiting for `queue`, for a call going now to send ahead of its own. */
  take(queue: string): PublishedEvent[] {
    const batch = this.waiting.get(queue);
    if (!batch) return [];
    this.waiting.delete(queue);
    return batch.splice(0);
  }
}
