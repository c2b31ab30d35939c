import { existingPlacements, placementBySlot } from "../shards/directory";
import { decodeSlot } from "../shards/task-slot";
import type { Env } from "../env";
import { groupEvents, type PublishedEvent } from "../contracts/events";
import { SCHEDULER_OBJECT } from "../protocols/durable-objects";
import { PublishBatcher } from "./publish-batcher";

/** The Durable Object name of a queue partition's coordinator: the queue's own name for partition 0 (the
 * only one of an unpartitioned queue, and the one carrying the queue's event stream). `#` cannot occur in
 * a queue name, so no queue's coordinator is another's partition. */
export function coordinatorName(queue: string, part: number): string {
  return part === 0 ? queue : `${queue}#${part}`;
}

export function coordinatorOf(env: Env, queue: string, part = 0) {
  return env.COORDINATOR.get(env.COORDINATOR.idFromName(coordinatorName(queue, part)));
}

/** The event hub of `queue` (one per queue, whatever its partitions). */
export function eventHubOf(env: Env, queue: string) {
  return env.EVENT_HUB.get(env.EVENT_HUB.idFromName(queue));
}

/**
 * Tells a queue's coordinators that tasks become due at `runAt` (ms) — those of `parts` when the caller
 * knows where it wrote, else every partition's — and publishes `events` (whose D1 write has committed) on
 * the queue's event hub, the two requests in parallel. Events with no wake-up (`runAt` undefined) wait up
 * to PUBLISH_COALESCE_MS in this isolate and go with others' in one request (src/effects/publish-batcher.ts);
 * a wake-up takes what waits for its queue and sends it ahead of its own events, keeping this isolate's
 * order. Only the effects owner (follow.ts) calls it; a failure here delays work until the coordinator's
 * alarm or the next cron tick, it loses nothing.
 *
 * @example
 * await wakeCoordinator(env, "emails", Date.now(), [{ kind: "enqueued", id }]);
 */
export async function wakeCoordinator(
  env: Env,
  queue: string,
  runAt: number | undefined,
  events: PublishedEvent[] = [],
  parts?: number[],
): Promise<void> {
  const batcher = batcherOf(env);
  // Events alone wait a few ms in this isolate for company (publish-batcher.ts).
  if (runAt === undefined) return events.length > 0 ? batcher.add(queue, events) : undefined;
  events = [...batcher.take(queue), ...events];
  const targets = parts ?? (await existingPlacements(env, queue)).map((p) => p.part);
  const notified = targets.length > 0 ? targets : [0];
  const calls: Array<Promise<unknown>> = notified.map((part) =>
    coordinatorOf(env, queue, part).notify({ queue, runAt, part }),
  );
  if (events.length > 0) calls.push(eventHubOf(env, queue).publish({ queue, events: groupEvents(events) }));
  await Promise.all(calls);
}

/**
 * Tells the coordinators of `parts` that tasks of `queue` became leasable on a sibling partition: each
 * serves the long polls it holds (they lease from every partition). Only the effects owner calls it, for
 * a coordinator that had arrivals and no poll of its own left to give them to.
 *
 * @example
 * await wakeWaitersAt(env, "emails", [2, 5]);
 */
export async function wakeWaitersAt(env: Env, queue: string, parts: number[]): Promise<void> {
  await Promise.all(parts.map((part) => coordinatorOf(env, queue, part).wakeWaiters({ queue, part })));
}

/** One publish batcher per event hub namespace (per deployment's env) in this isolate. */
const batchers = new WeakMap<object, PublishBatcher>();

function batcherOf(env: Env): PublishBatcher {
  let batcher = batchers.get(env.EVENT_HUB);
  if (!batcher) {
    batcher = new PublishBatcher((queue, events) =>
      eventHubOf(env, queue).publish({ queue, events: groupEvents(events) }),
    );
    batchers.set(env.EVENT_HUB, batcher);
  }
  return batcher;
}

/** The partition of `queue` a task's id names (its slot), or 0 when it carries none. */
export async function partOfTask(env: Env, queue: string, id: string): Promise<number> {
  const slot = decodeSlot(id);
  const placement = slot === null ? null : await placementBySlot(env, slot);
  return placement?.queue === queue ? placement.part : 0;
}

/**
 * Makes sure the schedules' alarm (the Scheduler object) fires by `at` (ms). Called after a schedule is
 * created, changed or resumed, and by the cron tick (which re-arms an alarm an eviction lost).
 *
 * @example
 * await armScheduler(env, row.next_run_at);
 */
export async function armScheduler(env: Env, at: number): Promise<void> {
  await env.SCHEDULER.get(env.SCHEDULER.idFromName(SCHEDULER_OBJECT)).arm({ at });
}
