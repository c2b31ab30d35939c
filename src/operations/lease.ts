import type { TaskRow } from "../db/schema";
import { coordinatorOf } from "../effects/wake";
import { leaseAnswers, type LeaseRequest } from "../engine/lease";
import { releaseTasks } from "../engine/release";
import { leasedTaskJson } from "../engine/task-row";
import { ackOnRoute } from "../shards/ack-routing";
import { leaseFromQueue } from "../shards/queue-ops";
import { nextLeaseOffset, queueRoute, type QueueRoute } from "../shards/queue-route";
import type { OperationContext } from "./context";

/** A lease as a client asks for it: `waitMs` 0 answers at once, more waits in the queue's coordinator. */
export type LeaseAsk = Omit<LeaseRequest, "queue" | "provisional"> & { waitMs: number };

/**
 * Leases up to `max` tasks of `queue` as rows (SQS, Durable Objects). With `waitMs` the request waits in
 * the queue's coordinator (long poll) for tasks to become leasable; tasks handed to it after it waited
 * are under a provisional lease (claim them with any fenced call, or they lapse with the attempt refunded).
 *
 * @example
 * const rows = await leaseRows(op, "emails", { max: 10, visibilityTimeoutS: 30, holder: null, waitMs: 0 });
 */
export async function leaseRows(op: OperationContext, queue: string, ask: LeaseAsk): Promise<TaskRow[]> {
  const route = await queueRoute(op.env, queue, op.now);
  const { waitMs, ...request } = ask;
  if (waitMs > 0) return longPoll(op, route, { ...request, queue }, waitMs);
  const leased = await leaseFromQueue(route, request, op.now);
  op.effects.after({ kind: "leased", queue, ids: leased.map((t) => t.id) });
  return leased;
}

/**
 * Leases as `leaseRows` does, each task rendered as the API's JSON text. Without a wait each view is
 * rendered by SQLite in the lease statement itself (leaseAnswers): the Worker does not build ~25 fields
 * per task to serialise them again.
 *
 * @example
 * const texts = await leaseTexts(op, "emails", { max: 100, visibilityTimeoutS: null, holder: "w1", waitMs: 0 });
 */
export async function leaseTexts(op: OperationContext, queue: string, ask: LeaseAsk): Promise<string[]> {
  const route = await queueRoute(op.env, queue, op.now);
  const { waitMs, ...request } = ask;
  if (waitMs > 0) return (await longPoll(op, route, { ...request, queue }, waitMs)).map(leasedTaskJson);
  const leased = await leaseFromQueue(route, request, op.now, undefined, leaseAnswers);
  op.effects.after({ kind: "leased", queue, ids: leased.map((t) => t.id) });
  return leased.map((t) => t.view);
}

/**
 * A long-poll lease: one partition's coordinator (in turn, for a partitioned queue; it leases from all)
 * holds the request until tasks are leasable or `waitMs` passes; it publishes the leases it makes. When the
 * client's disconnect is seen (`op.signal`) the wait is withdrawn, and tasks leased for it in the meantime
 * are handed back at once (pending, the attempt not counted). A disconnect that is never seen is covered
 * by the provisional lease: correctness never depends on the signal, it only makes the hand-back immediate.
 */
async function longPoll(
  op: OperationContext,
  route: QueueRoute,
  request: LeaseRequest,
  waitMs: number,
): Promise<TaskRow[]> {
  const part = route.parts[nextLeaseOffset(route.parts.length)]!.part;
  const coordinator = coordinatorOf(op.env, request.queue, part);
  const waiterId = crypto.randomUUID();
  const withdraw = () => op.defer(coordinator.forget({ waiterId }));
  op.signal.addEventListener("abort", withdraw, { once: true });
  const leased: TaskRow[] = await coordinator.lease({ ...request, part, waitMs, waiterId });
  op.signal.removeEventListener("abort", withdraw);
  if (!op.signal.aborted || leased.length === 0) return leased;
  // The client left while a lease for it was in flight: nobody will run these tasks.
  const now = op.clock();
  const outcomes = await ackOnRoute(
    await queueRoute(op.env, request.queue, now),
    leased.map((t) => ({ id: t.id, leaseToken: t.leaseToken! })),
    (db, items) => releaseTasks(db, items, now),
  );
  op.effects.after({ kind: "acked", outcomes, kinds: outcomes.map(() => "release") });
  return [];
}
