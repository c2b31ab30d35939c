import type { AckKind, AckOutcome } from "../engine/ack";
import { relayQueueHome } from "../shards/relay";
import type { Env } from "../env";
import type { PublishedEvent, TaskEventKind } from "../events/event-types";

/**
 * Tells a queue's coordinator that tasks become due at `runAt` (ms), and publishes `events` (whose D1
 * write has committed) in the same Durable Object request. Callers hand the promise to `ctx.waitUntil`
 * or await it; a failure here delays work until the next cron tick, it loses nothing.
 *
 * @example
 * c.executionCtx.waitUntil(wakeCoordinator(c.env, "emails", Date.now(), [{ kind: "enqueued", id }]));
 */
export async function wakeCoordinator(
  env: Env,
  queue: string,
  runAt: number | undefined,
  events: PublishedEvent[] = [],
): Promise<void> {
  const stub = env.COORDINATOR.get(env.COORDINATOR.idFromName(queue));
  if (events.length > 0) await stub.publish({ queue, events, runAt });
  else if (runAt !== undefined) await stub.notify({ queue, runAt });
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
  const earliest = new Map<string, number>();
  const events = new Map<string, PublishedEvent[]>();
  const note = (queue: string, runAt: number) => earliest.set(queue, Math.min(earliest.get(queue) ?? Infinity, runAt));
  const publish = (queue: string, event: PublishedEvent) => events.set(queue, [...(events.get(queue) ?? []), event]);
  outcomes.forEach((outcome, i) => {
    if (!outcome.ok) return;
    if (outcome.state === "pending") note(outcome.queue, outcome.run_at);
    for (const child of outcome.children) note(child.queue, child.run_at);
    const kind = Array.isArray(kinds) ? kinds[i] : kinds;
    if (kind === undefined || outcome.repeated) return;
    publish(outcome.queue, { kind: ackEventKind(kind, outcome), id: outcome.id });
    for (const child of outcome.children) publish(child.queue, { kind: "enqueued", id: child.id });
  });
  // A child of another queue was created on its parent's shard: send it to its own queue's shard first.
  const foreign = new Set(
    outcomes.flatMap((o) => (o.ok ? o.children.filter((c) => c.queue !== o.queue).map((c) => c.queue) : [])),
  );
  for (const queue of foreign) await relayQueueHome(env, queue, Date.now());
  const queues = new Set([...earliest.keys(), ...events.keys()]);
  await Promise.all([...queues].map((queue) => wakeCoordinator(env, queue, earliest.get(queue), events.get(queue))));
}

/**
 * Publishes events with no wake-up (heartbeats, direct leases, cancels): one Durable Object request.
 *
 * @example
 * c.executionCtx.waitUntil(publishEvents(c.env, "emails", [{ kind: "progress", id }]));
 */
export function publishEvents(env: Env, queue: string, events: PublishedEvent[]): Promise<void> {
  return wakeCoordinator(env, queue, undefined, events);
}
