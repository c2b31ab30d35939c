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
