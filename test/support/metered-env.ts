import type { Env } from "../../src/env";
import { meteredD1, type D1Usage } from "./metered-d1";

/** The Worker's bindings with every D1 database (DB, DB_1, …) wrapped in `wrap`; the rest as they are. */
export function withDatabases(env: Env, wrap: (d1: D1Database, name: string) => D1Database): Env {
  const out: Record<string, unknown> = { ...env };
  for (const [name, value] of Object.entries(env)) {
    if (/^DB(_[1-9][0-9]*)?$/.test(name)) out[name] = wrap(value as D1Database, name);
  }
  return out as unknown as Env;
}

/**
 * The Worker's bindings with every D1 database metered (src: test/support/metered-d1.ts): what a cron tick
 * or a request costs over all shards, and the most any one call read.
 *
 * @example
 * const metered = meteredEnv(env);
 * await runTick(metered.env, now);
 * metered.usage().rowsRead;
 */
export function meteredEnv(env: Env): { env: Env; usage(): Required<D1Usage>; reset(): void } {
  const meters: Array<ReturnType<typeof meteredD1>> = [];
  const wrapped = withDatabases(env, (d1) => {
    const meter = meteredD1(d1);
    meters.push(meter);
    return meter.db;
  });
  return {
    env: wrapped,
    usage: () => ({
      rowsRead: meters.reduce((n, m) => n + m.usage.rowsRead, 0),
      rowsWritten: meters.reduce((n, m) => n + m.usage.rowsWritten, 0),
      statements: meters.reduce((n, m) => n + m.usage.statements, 0),
      largestCallRead: Math.max(...meters.map((m) => m.usage.largestCallRead ?? 0)),
      calls: meters.reduce((n, m) => n + (m.usage.calls ?? 0), 0),
    }),
    reset: () => meters.forEach((m) => m.reset()),
  };
}
