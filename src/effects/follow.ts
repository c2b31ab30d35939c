import type { AckKind, AckOutcome, ReturnedTask, SettledDependent } from "../engine/store";
import type { Env } from "../env";
import type { PublishedEvent, TaskEventKind } from "../contracts/events";
import { deliverAlerts } from "../health/deliver-alerts";
import { runMove } from "../shards/move";
import { relayQueueHome } from "../shards/relay";
import { deliverOwedSettlements } from "../shards/remote-settlements";
import { homeShard } from "../shards/shard-set";
import type { Change } from "./changes";
import { tellTaskWaiters } from "./task-waiters";
import { partOfTask, publishRows, tellSessionsToCheck, wakeCoordinator, wakeWaitersAt } from "./wake";
import { SCHEDULER_OBJECT } from "../protocols/durable-objects";
import { existingPlacements } from "../shards/directory";

/** How long a move request keeps relaying after it answers; the cron tick continues whatever is left. */
export const MOVE_REQUEST_BUDGET_MS = 20_000;

/**
 * The one owner of what follows a state change: given what happened (`Change`, reported after the D1
 * write committed), wakes the coordinators that now have work, publishes the tasks' events, relays
 * chained children home to their queue's shard, delivers recorded alerts, continues a move. Every entry
 * point reaches it through `Effects.after`, so none places a wake-up or an event by hand.
 *
 * A failure here loses nothing: a missed wake-up is made good by the coordinator's alarm or the next
 * cron tick, a missed event by the stream's resume (clients reload on a gap).
 *
 * @example
 * await follow(env, { kind: "enqueued", queue: "emails", ids, earliestRunAt: Date.now(), parts: [0] });
 */
export async function follow(env: Env, change: Change, clock: () => number = Date.now): Promise<void> {
  // A change that finished tasks also answers the waits for them (task-waiters.ts), beside its own effects.
  await Promise.all([followChange(env, change, clock), tellTaskWaiters(env, change)]);
}

/** What follows `change` besides the waits for the tasks it finished. */
async function followChange(env: Env, change: Change, clock: () => number): Promise<void> {
  switch (change.kind) {
    case "enqueued":
      if (change.remoteDependencies) await deliverAndFollow(env, clock);
      if (change.earliestRunAt === null) return;
      return wakeCoordinator(
        env,
        change.queue,
        change.earliestRunAt,
        change.ids.map((id) => ({ kind: "enqueued", id })),
        change.parts,
        // A call of one task: what a coordinator gathers when they come fast (src/coordinator/gather.ts).
        change.ids.length === 1 && change.gathered !== true,
      );
    case "leased":
      if (change.rows === undefined) return publish(env, change.queue, change.ids, "leased");
      return publishRows(env, change.queue, "leased", change.rows);
    case "acked":
      return followAcks(env, change, clock);
    case "progress":
      return publish(env, change.queue, [change.id], "progress");
    case "cancelled":
      if (change.freesFlowKey && change.ids.length > 0) {
        const parts = change.ids.length === 1 ? [await partOfTask(env, change.queue, change.ids[0]!)] : undefined;
        const events = change.ids.map((id): PublishedEvent => ({ kind: "cancelled", id }));
        return wakeCoordinator(env, change.queue, clock(), events, parts);
      }
      return publish(env, change.queue, change.ids, "cancelled");
    case "cancel-requested":
      return tellSessionsToCheck(env, change.queue);
    case "dependents-settled":
      return followSettled(env, change.dependents, clock);
    case "redriven":
      if (change.ids.length === 0) return;
      return wakeCoordinator(
        env,
        change.queue,
        change.runAt,
        change.ids.map((id) => ({ kind: "redriven", id })),
      );
    case "configured":
      // Every partition: a queue switched to push runs the backlog now, not at the next enqueue or tick.
      // A resumed queue or key (flow control): its long polls and push dispatch get the backlog now too.
      if (change.mode === "push" || change.wake) return wakeCoordinator(env, change.queue, clock());
      return;
    case "schedule-set":
      return armScheduler(env, change.nextRunAt);
    case "swept":
      return wakeCoordinator(env, change.queue, change.runAt, change.events);
    case "undelivered-returned":
      return followUndeliveredReturned(env, change.queue, change.part, change.tasks);
    case "claim-windows-ended":
      return followClaimWindowsEnded(env, change.queue, change.part);
    case "sibling-arrivals":
      return wakeWaitersAt(env, change.queue, change.parts);
    case "alerts-recorded":
      return deliverAlerts(homeShard(env).db, env.WEBHOOK_SECRET, clock()).then(() => undefined);
    case "move-started":
      return runMove(env, change.queue, change.part, MOVE_REQUEST_BUDGET_MS, clock).then(() => undefined);
  }
}

/**
 * Makes sure the schedules' alarm (the Scheduler object) fires by `at` (ms). Private to the owner: every
 * schedule write and the cron tick report a `schedule-set` change instead of arming it by hand.
 */
async function armScheduler(env: Env, at: number): Promise<void> {
  await env.SCHEDULER.get(env.SCHEDULER.idFromName(SCHEDULER_OBJECT)).arm({ at });
}

/** Events with no wake-up: batched with others for a few ms (publish-batcher.ts). */
function publish(env: Env, queue: string, ids: string[], kind: TaskEventKind): Promise<void> {
  if (ids.length === 0) return Promise.resolve();
  return wakeCoordinator(
    env,
    queue,
    undefined,
    ids.map((id) => ({ kind, id })),
    [],
  );
}

/**
 * After a coordinator returned undelivered leases: each task is published as released, and the queue's other
 * partitions are woken (their polls lease from every partition); the coordinator that returned them
 * serves its own polls itself.
 */
async function followUndeliveredReturned(env: Env, queue: string, part: number, tasks: ReturnedTask[]): Promise<void> {
  if (tasks.length === 0) return;
  const events = tasks.map((t): PublishedEvent => ({ kind: "released", id: t.id }));
  const others = (await existingPlacements(env, queue)).map((p) => p.part).filter((p) => p !== part);
  if (others.length === 0) return wakeCoordinator(env, queue, undefined, events, []);
  return wakeCoordinator(env, queue, Math.min(...tasks.map((t) => t.run_at)), events, others);
}

/** After a coordinator ended hand-outs' claim windows (leasable now): the queue's other partitions serve
 * their polls; the coordinator that ended them serves its own. */
async function followClaimWindowsEnded(env: Env, queue: string, part: number): Promise<void> {
  const others = (await existingPlacements(env, queue)).map((p) => p.part).filter((p) => p !== part);
  if (others.length > 0) await wakeWaitersAt(env, queue, others);
}

/**
 * After a cancel or a reap settled dependents: each released one's queue is woken at its partition (once
 * per queue, at the earliest run time) and published `ready`; each ended one is published `dead` or
 * `cancelled` — what a completion's dependents get (followAcks).
 */
async function followSettled(env: Env, all: SettledDependent[], clock: () => number): Promise<void> {
  const earliest = new Map<string, Map<number, number>>();
  const events = new Map<string, PublishedEvent[]>();
  // Dependents on other databases: their settlements are owed, delivered first (and then followed).
  const dependents = all.filter((d) => !d.remote);
  if (dependents.length < all.length) await deliverAndFollow(env, clock);
  for (const dependent of dependents) {
    if (dependent.state === "pending") {
      const parts = earliest.get(dependent.queue) ?? new Map<number, number>();
      const part = await partOfTask(env, dependent.queue, dependent.id);
      parts.set(part, Math.min(parts.get(part) ?? Infinity, dependent.run_at));
      earliest.set(dependent.queue, parts);
    }
    const kind = dependent.state === "pending" ? "ready" : dependentEndKind(dependent.state);
    events.set(dependent.queue, [...(events.get(dependent.queue) ?? []), { kind, id: dependent.id }]);
  }
  await Promise.all(
    [...events].map(([queue, list]) => {
      const parts = earliest.get(queue);
      if (!parts) return wakeCoordinator(env, queue, undefined, list, []);
      return wakeCoordinator(env, queue, Math.min(...parts.values()), list, [...parts.keys()]);
    }),
  );
}

/** The event of a dependent its dependency's failure ended. */
function dependentEndKind(state: string): TaskEventKind {
  return state === "cancelled" ? "cancelled" : "dead";
}

/** The event an ack's outcome publishes. */
function ackEventKind(kind: AckKind, outcome: Extract<AckOutcome, { ok: true }>): TaskEventKind {
  if (kind === "complete") return "completed";
  if (kind === "release") return "released";
  return outcome.state === "dead" ? "dead" : "failed";
}

/**
 * After acks: wakes the coordinator of every queue that now has work — a retry's queue at its run_at,
 * each chained child's queue at the child's run_at — once per queue, at the earliest time; publishes each
 * task's event (by its kind) and its children's "enqueued" on the same call. A
 * repeated ack changed nothing and publishes nothing. A child of another queue was created on its
 * parent's shard: it is relayed to its own queue's shard first. Push dispatch's own queue (`drainedQueue`)
 * is not woken: the drain that made the acks runs its retries and same-queue children itself.
 */
async function followAcks(
  env: Env,
  { outcomes, kinds, drainedQueue }: Extract<Change, { kind: "acked" }>,
  clock: () => number,
): Promise<void> {
  // queue -> partition -> earliest run_at; queue -> events.
  const earliest = new Map<string, Map<number, number>>();
  const events = new Map<string, PublishedEvent[]>();
  const note = (queue: string, part: number, runAt: number) => {
    const parts = earliest.get(queue) ?? new Map<number, number>();
    parts.set(part, Math.min(parts.get(part) ?? Infinity, runAt));
    earliest.set(queue, parts);
  };
  const add = (queue: string, event: PublishedEvent) => {
    const list = events.get(queue);
    if (list) list.push(event);
    else events.set(queue, [event]);
  };
  let owedElsewhere = false;
  for (const [i, outcome] of outcomes.entries()) {
    // A freed flow slot (a keyed task of a queue limiting concurrency or ordering its keys): the queue's
    // waiting polls and push dispatch may lease the key's next task now (docs/flow-control.md).
    if (outcome.frees_flow_slot && outcome.queue !== undefined && outcome.queue !== drainedQueue) {
      note(outcome.queue, await partOfTask(env, outcome.queue, outcome.id), clock());
    }
    if (!outcome.ok) continue;
    const ownQueueWoken = outcome.queue !== drainedQueue;
    // A retry, and a child of the same queue (created with its parent's slot), are on the parent's
    // partition; looked up only for those (most acks are completions without children).
    const sameQueueChild = outcome.children.some((c) => c.queue === outcome.queue);
    const part =
      ownQueueWoken && (outcome.state === "pending" || sameQueueChild)
        ? await partOfTask(env, outcome.queue, outcome.id)
        : 0;
    if (ownQueueWoken && outcome.state === "pending") note(outcome.queue, part, outcome.run_at);
    for (const child of outcome.children) {
      if (child.queue !== outcome.queue) note(child.queue, 0, child.run_at);
      else if (ownQueueWoken) note(child.queue, part, child.run_at);
    }
    const kind = kinds[i];
    if (kind === undefined || outcome.repeated) continue;
    add(outcome.queue, { kind: ackEventKind(kind, outcome), id: outcome.id });
    for (const child of outcome.children) add(child.queue, { kind: "enqueued", id: child.id });
    // Dependents this task's finishing settled (src/engine/dependencies.ts): a released one is due now. One
    // on another database is told below (its settlement is owed: src/shards/remote-settlements.ts).
    for (const dependent of outcome.dependents ?? []) {
      if (dependent.remote) {
        owedElsewhere = true;
        continue;
      }
      if (dependent.state === "pending") {
        note(dependent.queue, await partOfTask(env, dependent.queue, dependent.id), dependent.run_at);
      }
      add(dependent.queue, {
        kind: dependent.state === "pending" ? "ready" : dependentEndKind(dependent.state),
        id: dependent.id,
      });
    }
  }
  const foreign = new Set(
    outcomes.flatMap((o) => (o.ok ? o.children.filter((c) => c.queue !== o.queue).map((c) => c.queue) : [])),
  );
  for (const queue of foreign) await relayQueueHome(env, queue, clock());
  const queues = new Set([...earliest.keys(), ...events.keys()]);
  await Promise.all([
    ...[...queues].map(async (queue) => {
      const parts = earliest.get(queue);
      if (!parts) return wakeCoordinator(env, queue, undefined, events.get(queue), []);
      const runAt = Math.min(...parts.values());
      return wakeCoordinator(env, queue, runAt, events.get(queue), [...parts.keys()]);
    }),
    owedElsewhere ? deliverAndFollow(env, clock) : undefined,
  ]);
}

/**
 * Delivers the settlements owed to dependents on other databases (src/shards/remote-settlements.ts) and
 * follows what they settled as a cancel's dependents are (woken, published). A delivery lost here (a crash)
 * stays owed: the cron tick's reconcile delivers it.
 */
async function deliverAndFollow(env: Env, clock: () => number): Promise<void> {
  const { settled } = await deliverOwedSettlements(env, clock());
  if (settled.length > 0) await followSettled(env, settled, clock);
}

/**
 * Where an entry point hands its changes: bound to the Worker's bindings and to how this invocation keeps
 * background work alive (`defer`: a request's or a Durable Object's `waitUntil`, or an await).
 *
 * @example
 * const effects = new Effects(env, (p) => ctx.waitUntil(p));
 * effects.after({ kind: "progress", queue: "emails", id });
 */
export class Effects {
  constructor(
    private readonly env: Env,
    private readonly defer: (work: Promise<unknown>) => void,
    private readonly clock: () => number = Date.now,
  ) {}

  /**
   * Performs what follows `change` now, before the caller answers, for a change whose effect the answer
   * promises (a schedule's PUT answers once its alarm is armed); a failure is the caller's.
   */
  follow(change: Change): Promise<void> {
    return follow(this.env, change, this.clock);
  }

  /** Performs what follows `change`, in the background of this invocation. */
  after(change: Change): void {
    this.defer(
      follow(this.env, change, this.clock).catch((error: unknown) => {
        // Nothing is lost (see follow); logged so an operator sees a coordinator that keeps failing.
        console.error(`effects: following ${change.kind} failed`, error);
      }),
    );
  }
}
