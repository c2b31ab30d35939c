import type { TaskRow } from "../db/schema";
import { releaseTasks } from "../engine/release";
import type { LeaseRequest } from "../engine/lease";
import { ackOnRoute } from "../shards/ack-routing";
import { queueRoute } from "../shards/queue-route";
import type { Env } from "../env";
import { coordinatorOf, wakeAfterAck } from "./wake";

/**
 * A long-poll lease: the queue's coordinator holds the request until tasks are leasable or `waitMs`
 * passes. When the client's disconnect is seen (`signal`, with the enable_request_signal flag) the wait
 * is withdrawn, and tasks leased for it in the meantime are handed back at once (pending, the attempt not
 * counted). A disconnect that is never seen is covered by the provisional lease (src/coordinator/
 * coordinator.ts): correctness never depends on this signal, it only makes the hand-back immediate.
 *
 * @example
 * const tasks = await longPollLease(env, { queue, max: 10, visibilityTimeoutS: 30, holder: null }, 20_000, request.signal, ctx);
 */
export async function longPollLease(
  env: Env,
  request: LeaseRequest & { part?: number },
  waitMs: number,
  signal: AbortSignal,
  ctx: { waitUntil(promise: Promise<unknown>): void },
  now: () => number,
): Promise<TaskRow[]> {
  const coordinator = coordinatorOf(env, request.queue, request.part ?? 0);
  const waiterId = crypto.randomUUID();
  const withdraw = () => ctx.waitUntil(coordinator.forget({ waiterId }));
  signal.addEventListener("abort", withdraw, { once: true });
  const leased: TaskRow[] = await coordinator.lease({ ...request, waitMs, waiterId });
  signal.removeEventListener("abort", withdraw);
  if (!signal.aborted || leased.length === 0) return leased;
  // The client left while a lease for it was in flight: nobody will run these tasks.
  const route = await queueRoute(env, request.queue, now());
  const outcomes = await ackOnRoute(
    route,
    leased.map((t) => ({ id: t.id, leaseToken: t.leaseToken! })),
    (db, items) => releaseTasks(db, items, now()),
  );
  ctx.waitUntil(wakeAfterAck(env, outcomes, "release"));
  return [];
}
