/**
 * Where a packs burn-down's time goes inside workerd (section 9): the same 100-task cycles the burn-down
 * runs, timed from the Worker around each D1 call, beside the time D1 itself reports for each statement
 * (`meta.duration`: SQLite's execution). What is left of a call is the binding's own cost — the call into
 * local D1's object, the statements' parameters and the rows coming back — plus the prototype's work in
 * JavaScript around it.
 */
import { openDb } from "../src/db/client";
import { bulkEnqueue, VISIBILITY_S } from "./engine-ops";
import { ackPacks, ackThenLeasePacks, leasePacks } from "./packs-engine";

/** Milliseconds per cycle of 100 tasks, each part averaged over the cycles. */
export interface CallTimes {
  cycles: number;
  /** A `SELECT 1` through the same binding: the floor of any call. */
  emptyCallMs: number;
  /** Lease then complete, two calls: each call's time, and D1's own time of its statements. */
  leaseMs: number;
  leaseSqlMs: number;
  completeMs: number;
  completeSqlMs: number;
  /** The ack carrying the next lease, one call: its time, D1's time of its statements, and the whole cycle
   * (the call plus the prototype's JavaScript around it). */
  carryCallMs: number;
  carrySqlMs: number;
  carryCycleMs: number;
  /** D1's time per statement of the carrying batch, in its order (range, ack, ack counters, lease counters,
   * lease). */
  carryStatementsMs: number[];
}

const SIZE = 100;

export async function timePackCalls(d1: D1Database, queue: string, cycles: number): Promise<CallTimes> {
  let sqlMs: number[] = [];
  // The last batch's time in the Worker, and D1's own time for each of its statements.
  let callMs = 0;
  const timed = {
    prepare: (q: string) => d1.prepare(q),
    batch: async (statements: D1PreparedStatement[]) => {
      const t0 = performance.now();
      const results = await d1.batch(statements);
      callMs = performance.now() - t0;
      sqlMs = results.map((r) => r.meta.duration);
      return results;
    },
    exec: (q: string) => d1.exec(q),
  } as unknown as D1Database;
  const db = openDb(timed);
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  const request = { queue, max: SIZE, visibilityTimeoutS: VISIBILITY_S, holder: "bench" };
  const t: Omit<CallTimes, "cycles" | "carryStatementsMs"> = {
    emptyCallMs: 0,
    leaseMs: 0,
    leaseSqlMs: 0,
    completeMs: 0,
    completeSqlMs: 0,
    carryCallMs: 0,
    carrySqlMs: 0,
    carryCycleMs: 0,
  };
  const perStatement: number[] = [];
  for (let i = 0; i < cycles; i++) {
    const t0 = performance.now();
    await d1.prepare("SELECT 1").all();
    t.emptyCallMs += performance.now() - t0;
  }
  // Two loops of `cycles` leases of SIZE, plus the first carried lease; enqueued 10,000 per call, as the burn-down.
  await bulkEnqueue(d1, "packs", queue, (2 * cycles + 1) * SIZE);
  for (let i = 0; i < cycles; i++) {
    let t0 = performance.now();
    const leased = await leasePacks(db, request, Date.now());
    t.leaseMs += performance.now() - t0;
    t.leaseSqlMs += sum(sqlMs);
    t0 = performance.now();
    const out = await ackPacks(
      db,
      "complete",
      queue,
      leased.ids.map((id) => ({ id, leaseToken: leased.token })),
      Date.now(),
    );
    t.completeMs += performance.now() - t0;
    t.completeSqlMs += sum(sqlMs);
    if (leased.count !== SIZE || out.some((o) => !o.ok)) throw new Error("call times: a cycle fell short");
  }
  let held = await leasePacks(db, request, Date.now());
  for (let i = 0; i < cycles; i++) {
    const c0 = performance.now();
    const out = await ackThenLeasePacks(
      db,
      { kind: "complete", items: held.ids.map((id) => ({ id, leaseToken: held.token })) },
      request,
      Date.now(),
    );
    t.carryCycleMs += performance.now() - c0;
    if (out.lease.count !== SIZE || out.outcomes.some((o) => !o.ok)) throw new Error("call times: a cycle fell short");
    sqlMs.forEach((ms, k) => (perStatement[k] = (perStatement[k] ?? 0) + ms));
    t.carrySqlMs += sum(sqlMs);
    t.carryCallMs += callMs;
    held = out.lease;
  }
  await ackPacks(
    db,
    "complete",
    queue,
    held.ids.map((id) => ({ id, leaseToken: held.token })),
    Date.now(),
  );
  const per = (ms: number) => ms / cycles;
  return {
    cycles,
    ...(Object.fromEntries(Object.entries(t).map(([k, v]) => [k, per(v)])) as typeof t),
    carryStatementsMs: perStatement.map(per),
  };
}
