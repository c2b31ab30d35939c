import type { AckOutcome } from "../engine/ack";
import type { Env } from "../env";

/**
 * Tells a queue's coordinator that tasks become due at `runAt` (ms). Callers hand the promise to
 * `ctx.waitUntil` or await it; a failure here delays work until the next cron tick, it loses nothing.
 *
 * @example
 * c.executionCtx.waitUntil(wakeCoordinator(c.env, "emails", Date.now()));
 */
export async function wakeCoordinator(env: Env, queue: string, runAt: number): Promise<void> {
  const stub = env.COORDINATOR.get(env.COORDINATOR.idFromName(queue));
  await stub.notify({ queue, runAt });
}

/**
 * After an ack: wakes the coordinator of every queue that now has work — a retry's queue at its run_at,
 * each chained child's queue at the child's run_at — once per queue, at the earliest time.
 *
 * @example
 * c.executionCtx.waitUntil(wakeAfterAck(c.env, outcomes));
 */
export async function wakeAfterAck(env: Env, outcomes: AckOutcome[]): Promise<void> {
  const earliest = new Map<string, number>();
  const note = (queue: string, runAt: number) => earliest.set(queue, Math.min(earliest.get(queue) ?? Infinity, runAt));
  for (const outcome of outcomes) {
    if (!outcome.ok) continue;
    if (outcome.state === "pending") note(outcome.queue, outcome.run_at);
    for (const child of outcome.children) note(child.queue, child.run_at);
  }
  await Promise.all([...earliest].map(([queue, runAt]) => wakeCoordinator(env, queue, runAt)));
}
