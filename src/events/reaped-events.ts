import type { ReapResult } from "../engine/store";
import type { PublishedEvent, TaskEventKind } from "../contracts/events";

/** The event of one reaped task, by what the reaper made of it. */
function reapedKind(state: string, unclaimed: boolean): TaskEventKind {
  if (state === "cancelled") return "cancelled";
  // An unclaimed provisional lease goes back with its attempt refunded: no attempt failed.
  if (unclaimed) return "released";
  // A lapsed lease: back to pending after backoff ("failed", with "lease expired" and the retry time), or dead.
  return state === "dead" ? "dead" : "failed";
}

/**
 * Adds the events of one reaper run to `into`, per queue: what the cron tick publishes on the wake-up it
 * already makes (or one publish call for a queue it had no other reason to wake).
 *
 * @example
 * const events = new Map<string, PublishedEvent[]>();
 * addReapedEvents(events, await reapExpiredLeases(db, now));
 */
export function addReapedEvents(into: Map<string, PublishedEvent[]>, result: ReapResult): void {
  const unclaimed = new Set(result.unclaimed);
  for (const task of result.reaped) {
    const event: PublishedEvent = { kind: reapedKind(task.state, unclaimed.has(task.id)), id: task.id };
    into.set(task.queue, [...(into.get(task.queue) ?? []), event]);
  }
}
