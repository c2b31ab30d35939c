import { existingPlacements, placementBySlot } from "../shards/directory";
import { decodeSlot } from "../shards/task-slot";
import type { Env } from "../env";
import { groupEvents, type PublishedEvent, type TaskEventKind } from "../contracts/events";
import type { EventRow } from "../protocols/durable-objects";
import { PublishBatcher } from "./publish-batcher";
import { QuietHubs } from "./quiet-hubs";
import { gatherHints } from "./gather-hints";

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
function eventHubOf(env: Env, queue: string) {
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
  /** The wake-up of an enqueue call of one task: its coordinator counts it, and answers whether it gathers. */
  arrival = false,
): Promise<void> {
  const { batcher, quiet } = hubLinkOf(env);
  // Events alone wait a few ms in this isolate for company (publish-batcher.ts), unless nobody listens.
  if (runAt === undefined) return events.length > 0 && !quiet.skips(queue) ? batcher.add(queue, events) : undefined;
  events = [...batcher.take(queue), ...events];
  const targets = parts ?? (await existingPlacements(env, queue)).map((p) => p.part);
  const notified = targets.length > 0 ? targets : [0];
  const calls: Array<Promise<unknown>> = notified.map(async (part) => {
    const hint = await coordinatorOf(env, queue, part).notify({ queue, runAt, part, arrival });
    if (arrival) gatherHints.answered(queue, part, hint);
  });
  if (events.length > 0) calls.push(publishNow(env, queue, events));
  await Promise.all(calls);
}

/**
 * Publishes `events` (whose D1 write has committed) on `queue`'s event hub now — unless its hub answered
 * lately that nobody listens, and then sends nothing (src/effects/quiet-hubs.ts).
 */
function publishNow(env: Env, queue: string, events: PublishedEvent[]): Promise<void> {
  return hubLinkOf(env).quiet.publish(queue, () =>
    eventHubOf(env, queue).publish({ queue, events: groupEvents(events) }),
  );
}

/**
 * Publishes events for rows the caller itself just wrote (its leases), with what an event shows of each:
 * the hub reads nothing. Skipped like `publishNow` while nobody listens.
 *
 * @example
 * await publishRows(env, "emails", "leased", rows.map(eventRowOf));
 */
export function publishRows(env: Env, queue: string, kind: TaskEventKind, rows: EventRow[]): Promise<void> {
  if (rows.length === 0) return Promise.resolve();
  return hubLinkOf(env).quiet.publish(queue, () => eventHubOf(env, queue).publishRows({ queue, kind, rows }));
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

/** This isolate's way to the event hubs of one namespace: the publish batcher and the quiet hubs. */
interface HubLink {
  batcher: PublishBatcher;
  quiet: QuietHubs;
}

/** One link per event hub namespace (per deployment's env) in this isolate. */
const links = new WeakMap<object, HubLink>();

function hubLinkOf(env: Env): HubLink {
  let link = links.get(env.EVENT_HUB);
  if (!link) {
    link = { batcher: new PublishBatcher((queue, events) => publishNow(env, queue, events)), quiet: new QuietHubs() };
    links.set(env.EVENT_HUB, link);
  }
  return link;
}

/** The partition of `queue` a task's id names (its slot), or 0 when it carries none. */
export async function partOfTask(env: Env, queue: string, id: string): Promise<number> {
  const slot = decodeSlot(id);
  const placement = slot === null ? null : await placementBySlot(env, slot);
  return placement?.queue === queue ? placement.part : 0;
}

/** Tells the worker sessions of `queue` (held by partition 0's coordinator) to look at their leases now: a
 * cancel was requested of a task one of them holds, and its worker hears of it from its next extension. */
export async function tellSessionsToCheck(env: Env, queue: string): Promise<void> {
  await coordinatorOf(env, queue).checkSessions({ queue });
}
