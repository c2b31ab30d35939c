import type { StoredTask } from "../contracts/stored-task";
import { coordinatorOf } from "../effects/wake";
import type { LeaseRequest } from "../engine/store";
import { leasedTaskJson } from "../contracts/task-view";
import { leaseFromQueue } from "../shards/queue-ops";
import { nextLeaseOffset, queueRoute, type QueueRoute } from "../shards/queue-route";
import type { OperationContext } from "./context";

/** A lease as a client asks for it: `waitMs` 0 answers at once, more waits in the queue's coordinator;
 * `waiterId` names that wait, so the client can withdraw it (`withdrawPoll`). */
export type LeaseAsk = Omit<LeaseRequest, "queue" | "provisional"> & { waitMs: number; waiterId?: string };

/**
 * Leases up to `max` tasks of `queue` as rows (SQS, Durable Objects). With `waitMs` the request waits in
 * the queue's coordinator (long poll) for tasks to become leasable; tasks handed to it after it waited
 * are under a provisional lease (claim them with any fenced call, or they lapse with the attempt refunded).
 *
 * @example
 * const rows = await leaseRows(op, "emails", { max: 10, visibilityTimeoutS: 30, holder: null, waitMs: 0 });
 */
export async function leaseRows(op: OperationContext, queue: string, ask: LeaseAsk): Promise<StoredTask[]> {
  const route = await queueRoute(op.env, queue, op.now);
  const { waitMs, waiterId, ...request } = ask;
  if (waitMs > 0) return longPoll(op, route, { ...request, queue }, waitMs, waiterId);
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
  const { waitMs, waiterId, ...request } = ask;
  if (waitMs > 0) return (await longPoll(op, route, { ...request, queue }, waitMs, waiterId)).map(leasedTaskJson);
  const leased = await leaseFromQueue(route, request, op.now, undefined, (store, r, now) => store.leaseAnswers(r, now));
  op.effects.after({ kind: "leased", queue, ids: leased.map((t) => t.id) });
  return leased.map((t) => t.view);
}

/**
 * A long-poll lease: one partition's coordinator (in turn, for a partitioned queue; it leases from all and
 * is woken by any partition's arrivals) holds the request until tasks are leasable or `waitMs` passes; it
 * publishes the leases it makes. The wait is named (`waiterId`: the client's, else a fresh one) so it can
 * be withdrawn: by the client (`withdrawPoll`), or here when the client's disconnect is seen (`op.signal`;
 * what the platform reports where: docs/api.md, "Long polls"). The coordinator then answers it with
 * nothing and takes back whatever it had leased for it and is still unclaimed. A disconnect that is never
 * seen is covered by the provisional lease: correctness never depends on the signal. Where the platform
 * is known to report it (`op.hangUpReported`), a lease handed out after the wait is a plain one: no claim
 * window, its expiry counting the attempt (docs/api.md, "Long polls": what a plain client keeps, where).
 */
async function longPoll(
  op: OperationContext,
  route: QueueRoute,
  request: LeaseRequest,
  waitMs: number,
  waiterId: string = crypto.randomUUID(),
): Promise<StoredTask[]> {
  const part = route.parts[nextLeaseOffset(route.parts.length)]!.part;
  const coordinator = coordinatorOf(op.env, request.queue, part);
  // The handler itself is cancelled with the request (nothing after its await runs): withdraw from here.
  const withdraw = () => op.defer(coordinator.withdrawPoll({ waiterId }));
  op.signal.addEventListener("abort", withdraw, { once: true });
  try {
    return await coordinator.lease({ ...request, part, waitMs, waiterId, hangUpReported: op.hangUpReported ?? false });
  } finally {
    op.signal.removeEventListener("abort", withdraw);
  }
}

/**
 * Withdraws the long poll a client named `waiterId` (POST /v1/queues/{queue}/lease/withdraw): it is
 * answered at once with no tasks, and tasks already leased for it and not yet claimed go back to pending.
 * A client stopping calls this, then reads the poll's answer (and releases what it may still bring). The
 * poll may wait at any partition's coordinator: each is asked (a withdrawal is rare; K ≤ MAX_PARTITIONS).
 * A name no coordinator knows is a no-op, never an error. Returns whether the poll was found.
 *
 * @example
 * const { withdrawn } = await withdrawPoll(op, "emails", "w-4f1c…");
 */
export async function withdrawPoll(
  op: OperationContext,
  queue: string,
  waiterId: string,
): Promise<{ withdrawn: boolean }> {
  const route = await queueRoute(op.env, queue, op.now);
  const found = await Promise.all(
    route.parts.map((p) => coordinatorOf(op.env, queue, p.part).withdrawPoll({ waiterId })),
  );
  return { withdrawn: found.some(Boolean) };
}
