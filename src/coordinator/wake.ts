import type { AckKind, AckOutcome } from "../engine/ack";
import { existingPlacements, placementBySlot } from "../shards/directory";
import { relayQueueHome } from "../shards/relay";
import { decodeSlot } from "../shards/task-slot";
import type { Env } from "../env";
import { groupEvents, type PublishedEvent, type TaskEventKind } from "../events/event-types";
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

/**
 * Tells a queue's coordinators that tasks become due at `runAt` (ms) — those of `parts` when the caller
 * knows where it wrote, else every partition's — and publishes `events` (whose D1 write has committed) on
 * partition 0's, in the same Durable Object request as its wake-up. An unpartitioned queue: one request.
 * Events with no wake-up (`runAt` undefined) wait up to PUBLISH_COALESCE_MS in this isolate and go with
 * others' in one request (src/coordinator/publish-batcher.ts). Callers hand the promise to
 * `ctx.waitUntil` or await it; a failure here delays work until the next cron tick, it loses nothing.
 *
 * @example
 * c.executionCtx.waitUntil(wakeCoordinator(c.env, "emails", Date.now(), [{ kind: "enqueued", id }]));
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
  // A wake-up goes now, carrying what waits for this queue ahead of its own events (this isolate's order).
  events = [...batcher.take(queue), ...events];
  const targets = parts ?? (await existingPlacements(env, queue)).map((p) => p.part);
  const notified = targets.length > 0 ? targets : [0];
  const home = coordinatorOf(env, queue, 0);
  const calls: Array<Promise<unknown>> = [];
  if (events.length > 0)
    calls.push(home.publish({ queue, events: groupEvents(events), runAt: notified.includes(0) ? runAt : undefined }));
  for (const part of notified) {
    if (part === 0 && events.length > 0) continue; // rode on the publish
    calls.push(coordinatorOf(env, queue, part).notify({ queue, runAt, part }));
  }
  await Promise.all(calls);
}

/** One publish batcher per coordinator namespace (per deployment's env) in this isolate. */
const batchers = new WeakMap<object, PublishBatcher>();

function batcherOf(env: Env): PublishBatcher {
  let batcher = batchers.get(env.COORDINATOR);
  if (!batcher) {
    batcher = new PublishBatcher((queue, events) =>
      coordinatorOf(env, queue, 0).publish({ queue, events: groupEvents(events) }),
    );
    batchers.set(env.COORDINATOR, batcher);
  }
  return batcher;
}

/** The partition of `queue` a task's id names (its slot), or 0 when it carries none. */
export async function partOfTask(env: Env, queue: string, id: string): Promise<number> {
  const slot = decodeSlot(id);
  const placement = slot === null ? null : await placementBySlot(env, slot);
  return placement?.queue === queue ? placement.part : 0;
}

/** The event an ack's outcome publishes. */
function ackEventKind(kind: AckKind, outcome: Extract<AckOutcome, { ok: true }>): TaskEventKind {
  if (kind === "complete") return "completed";
  if (kind === "release") return "released";
  return outcome.state === "dead" ? "dead" : "failed";
}

/**
 * After an ack: wakes the coordinator of every queue that now has work — a retry's queue at its run_at,
 * each chained child's queue at the child's run_at — once per queue, at the earliest time; and, given
 * the ack's kind (one, or one per outcome), publishes each task's event and its children's "enqueued"
 * on the same call. A repeated ack changed nothing and publishes nothing.
 *
 * @example
 * c.executionCtx.waitUntil(wakeAfterAck(c.env, outcomes, "complete"));
 */
export async function wakeAfterAck(env: Env, outcomes: AckOutcome[], kinds?: AckKind | AckKind[]): Promise<void> {
  // queue -> partition -> earliest run_at; queue -> events.
  const earliest = new Map<string, Map<number, number>>();
  const events = new Map<string, PublishedEvent[]>();
  const note = (queue: string, part: number, runAt: number) => {
    const parts = earliest.get(queue) ?? new Map<number, number>();
    parts.set(part, Math.min(parts.get(part) ?? Infinity, runAt));
    earliest.set(queue, parts);
  };
  const publish = (queue: string, event: PublishedEvent) => {
    const list = events.get(queue);
    if (list) list.push(event);
    else events.set(queue, [event]);
  };
  for (const [i, outcome] of outcomes.entries()) {
    if (!outcome.ok) continue;
    // A retry, and a child of the same queue (created with its parent's slot), are on the parent's
    // partition; looked up only for those (most acks are completions without children).
    const sameQueueChild = outcome.children.some((c) => c.queue === outcome.queue);
    const part = outcome.state === "pending" || sameQueueChild ? await partOfTask(env, outcome.queue, outcome.id) : 0;
    if (outcome.state === "pending") note(outcome.queue, part, outcome.run_at);
    for (const child of outcome.children) note(child.queue, child.queue === outcome.queue ? part : 0, child.run_at);
    const kind = Array.isArray(kinds) ? kinds[i] : kinds;
    if (kind === undefined || outcome.repeated) continue;
    publish(outcome.queue, { kind: ackEventKind(kind, outcome), id: outcome.id });
    for (const child of outcome.children) publish(child.queue, { kind: "enqueued", id: child.id });
  }
  // A child of another queue was created on its parent's shard: send it to its own queue's shard first.
  const foreign = new Set(
    outcomes.flatMap((o) => (o.ok ? o.children.filter((c) => c.queue !== o.queue).map((c) => c.queue) : [])),
  );
  for (const queue of foreign) await relayQueueHome(env, queue, Date.now());
  const queues = new Set([...earliest.keys(), ...events.keys()]);
  await Promise.all(
    [...queues].map(async (queue) => {
      const parts = earliest.get(queue);
      if (!parts) return wakeCoordinator(env, queue, undefined, events.get(queue), []);
      const runAt = Math.min(...parts.values());
      return wakeCoordinator(env, queue, runAt, events.get(queue), [...parts.keys()]);
    }),
  );
}

/**
 * Publishes events with no wake-up (heartbeats, direct leases, cancels): batched with others for up to
 * PUBLISH_COALESCE_MS (src/coordinator/publish-batcher.ts).
 *
 * @example
 * c.executionCtx.waitUntil(publishEvents(c.env, "emails", [{ kind: "progress", id }]));
 */
export function publishEvents(env: Env, queue: string, events: PublishedEvent[]): Promise<void> {
  return wakeCoordinator(env, queue, undefined, events, []);
}
