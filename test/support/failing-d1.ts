import { expect } from "vitest";
import type { Env } from "../../src/env";
import { withDatabases } from "./metered-env";

/**
 * A D1 binding that stops working at a chosen call, as a Worker killed half way through an invocation
 * would: calls before the `failAt`-th (1-based; a statement or a whole batch) go to the real database,
 * that one and every later one throw without touching it. Shared between bindings by passing one
 * `calls` counter, so "the k-th D1 call of a tick" counts across shards.
 *
 * @example
 * const calls = { n: 0 };
 * const broken = failingD1(env.DB, 5, calls); // the 5th call, on any binding sharing `calls`, fails
 */
export function failingD1(db: D1Database, failAt: number, calls: { n: number }): D1Database {
  const unwrap = new WeakMap<object, D1PreparedStatement>();
  const pass = () => {
    calls.n += 1;
    if (calls.n >= failAt) throw new Error(`injected D1 failure at call ${calls.n}`);
  };
  const wrap = (stmt: D1PreparedStatement): D1PreparedStatement => {
    const wrapped = {
      bind: (...values: unknown[]) => wrap(stmt.bind(...values)),
      first: async (column?: string) => (pass(), column === undefined ? stmt.first() : stmt.first(column)),
      run: async () => (pass(), stmt.run()),
      all: async () => (pass(), stmt.all()),
      raw: async (options?: { columnNames?: boolean }) => (
        pass(),
        options?.columnNames ? stmt.raw({ columnNames: true }) : stmt.raw()
      ),
    } as unknown as D1PreparedStatement;
    unwrap.set(wrapped, stmt);
    return wrapped;
  };
  return {
    prepare: (query: string) => wrap(db.prepare(query)),
    batch: async (statements: D1PreparedStatement[]) => (pass(), db.batch(statements.map((s) => unwrap.get(s) ?? s))),
    exec: async (query: string) => (pass(), db.exec(query)),
    withSession: () => {
      throw new Error("failingD1: sessions are not supported");
    },
    dump: () => db.dump(),
  } as unknown as D1Database;
}

/**
 * Runs `attempt` at every D1 call it can be stopped at: with `env`'s databases (sharing one counter) failing
 * at call 1, then 2, … until an attempt makes fewer calls than the one set to fail — every interruption point
 * tried. `attempt` sets up its own scenario, runs the step under test on `broken`, makes it good, checks
 * the state and clears the scenario away (test/support/clear-queue.ts: else every later point's step sweeps
 * it again, and the calls of a run grow with the points before it); it answers "finished" when the step ran to its end, else the error's text. The last attempt,
 * never interrupted, must have finished. Answers how many points there were (the calls of a whole run + 1).
 *
 * @example
 * const points = await atEveryD1Call(env, 100, async (broken) => {
 *   const outcome = await runTick(broken, now).then(() => "finished", String);
 *   await runTick(env, now);
 *   await expectTicked();
 *   return outcome;
 * });
 */
export async function atEveryD1Call(
  env: Env,
  limit: number,
  attempt: (broken: Env, failAt: number) => Promise<string>,
): Promise<number> {
  for (let failAt = 1; ; failAt++) {
    expect(failAt).toBeLessThan(limit);
    const calls = { n: 0 };
    const outcome = await attempt(
      withDatabases(env, (d1) => failingD1(d1, failAt, calls)),
      failAt,
    );
    if (calls.n < failAt) {
      expect(outcome).toBe("finished");
      return failAt;
    }
  }
}
