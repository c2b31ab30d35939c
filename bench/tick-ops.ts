/**
 * The cron tick as the growth section measures it, inside the bench worker: `runTick` itself (src/cron/tick.ts)
 * with the Worker's own Durable Object classes bound, its D1 reads and writes metered, and a lease on another,
 * small queue timed while a tick runs.
 */
import { runTick } from "../src/cron/tick";
import type { Env } from "../src/env";
import { meteredD1, type D1Usage } from "../test/support/metered-d1";
import { edgeqSystem } from "./engine-ops";

/** What one tick cost on D1, and how long it took inside workerd. */
export type TickProbe = D1Usage & { ms: number };

/**
 * Runs one tick at `now` with every D1 binding metered (the home database and any shard).
 *
 * @example
 * const { rowsRead } = await probeTick(env, Date.now());
 */
export async function probeTick(env: Env, now: number): Promise<TickProbe> {
  const meters: Array<ReturnType<typeof meteredD1>> = [];
  const metered: Record<string, unknown> = { ...env };
  for (const [name, value] of Object.entries(env)) {
    if (/^DB(_[1-9][0-9]*)?$/.test(name)) {
      const meter = meteredD1(value as D1Database);
      meters.push(meter);
      metered[name] = meter.db;
    }
  }
  const t0 = performance.now();
  await runTick(metered as unknown as Env, now);
  const ms = performance.now() - t0;
  const sum = (key: "rowsRead" | "rowsWritten" | "statements") => meters.reduce((n, m) => n + m.usage[key], 0);
  return { rowsRead: sum("rowsRead"), rowsWritten: sum("rowsWritten"), statements: sum("statements"), ms };
}

/**
 * One lease of one task from `queue`, left in flight (a worker holding it): the request is nothing but the
 * lease, so the caller's timing of it is a lease's answer time — with a tick running beside it, including
 * how long it waited behind the tick's statements. Returns the milliseconds inside workerd as well.
 *
 * @example
 * const { ms } = await leaseOnce(env.DB, "small");
 */
export async function leaseOnce(d1: D1Database, queue: string): Promise<{ ms: number }> {
  const system = edgeqSystem(d1);
  const t0 = performance.now();
  const held = await system.lease(queue, 1, Date.now());
  const ms = performance.now() - t0;
  if (held.length !== 1) throw new Error(`lease-once: ${queue} had nothing to lease`);
  return { ms };
}
