/**
 * The operations the benchmark runs, written once against a D1Database so the same code runs inside
 * workerd (the bench worker, real local D1) and in Node (node:sqlite through bench/sqlite-d1.ts).
 * edgeq's side calls the real engine functions from src/engine; the baseline calls bench/baseline-jobs.ts.
 */
import { openDb } from "../src/db/client";
import { completeTasks } from "../src/engine/complete";
import { enqueueTasks } from "../src/engine/enqueue";
import { failTasks } from "../src/engine/fail";
import { leaseAnswers } from "../src/engine/lease";
import { reapExpiredLeases } from "../src/engine/reap";
import { meteredD1, type D1Usage } from "../test/support/metered-d1";
import { packsSystem } from "./packs-ops";
import { packStoreSystem } from "./pack-store-ops";
import { servedSystem } from "./served-store-ops";
import { baselineComplete, baselineDequeue, baselineEnqueue, baselineFail, type BaselineJob } from "./baseline-jobs";

/** A leased task: enough to acknowledge it. */
export interface Held {
  id: string | number;
  token: string;
}

/** A queue implementation under test. */
export interface QueueSystem {
  enqueue(queue: string, n: number, opts: { dedupe?: boolean; first?: number }, now: number): Promise<void>;
  lease(queue: string, max: number, now: number): Promise<Held[]>;
  complete(items: Held[], now: number): Promise<number>;
  fail(items: Held[], now: number, permanent: boolean): Promise<number>;
  /** Completes `items` and leases up to `max` more in one database call (an ack carrying the next lease),
   * where the system has one. */
  completeThenLease?(
    queue: string,
    items: Held[],
    max: number,
    now: number,
  ): Promise<{ completed: number; held: Held[] }>;
}

/**
 * `edgeq`: the row store's engine functions; `served`: the store every shard serves (the hybrid of rows and
 * packs: bench/served-store-ops.ts); `packs`: the packs prototype (bench/packs-engine.ts, docs/design/packs.md),
 * not the product's storage; `pack-store`: the product's pack store alone.
 */
export type SystemName = "edgeq" | "served" | "baseline" | "packs" | "pack-store";

export const VISIBILITY_S = 300;

export function edgeqSystem(d1: D1Database): QueueSystem {
  const db = openDb(d1);
  return {
    async enqueue(queue, n, opts, now) {
      const first = opts.first ?? 0;
      const tasks = Array.from({ length: n }, (_, i) => ({
        payload: { i: first + i },
        dedupeKey: opts.dedupe ? `k${first + i}` : undefined,
      }));
      const { tasks: out } = await enqueueTasks(db, queue, tasks, now);
      if (out.some((t) => t.deduplicated)) throw new Error("edgeq enqueue: unexpected dedupe");
    },
    async lease(queue, max, now) {
      // The HTTP lease's engine function: the answer's views rendered by SQLite (src/engine/lease.ts).
      const leased = await leaseAnswers(db, { queue, max, visibilityTimeoutS: VISIBILITY_S, holder: "bench" }, now);
      return leased.map((t) => ({ id: t.id, token: t.leaseToken }));
    },
    async complete(items, now) {
      if (items.length === 0) return 0;
      const out = await completeTasks(
        db,
        items.map((i) => ({ id: String(i.id), leaseToken: i.token })),
        now,
      );
      return out.filter((o) => o.ok).length;
    },
    async fail(items, now, permanent) {
      if (items.length === 0) return 0;
      const out = await failTasks(
        db,
        items.map((i) => ({
          id: String(i.id),
          leaseToken: i.token,
          message: "boom",
          retryable: !permanent,
          retryAfterS: 0,
        })),
        now,
      );
      return out.filter((o) => o.ok).length;
    },
  };
}

export function baselineSystem(d1: D1Database): QueueSystem {
  const held = (jobs: BaselineJob[]): Held[] => jobs.map((j) => ({ id: j.id, token: j.holder }));
  const back = (items: Held[]): BaselineJob[] => items.map((i) => ({ id: Number(i.id), holder: i.token }));
  return {
    async enqueue(queue, n, opts, now) {
      const first = opts.first ?? 0;
      // D1 allows 1,000 statements per invocation; one statement per job, so chunk the batch like a user would.
      for (let start = 0; start < n; start += 500) {
        const jobs = Array.from({ length: Math.min(500, n - start) }, (_, i) => ({
          payload: { i: first + start + i },
          dedupeKey: opts.dedupe ? `k${first + start + i}` : undefined,
        }));
        await baselineEnqueue(d1, queue, jobs, now);
      }
    },
    async lease(queue, max, now) {
      return held(await baselineDequeue(d1, queue, max, "bench", VISIBILITY_S * 1000, now));
    },
    complete: (items, now) => baselineComplete(d1, back(items), now),
    fail: (items, now, permanent) => baselineFail(d1, back(items), now, permanent, 0),
  };
}

export function systemFor(name: SystemName, d1: D1Database): QueueSystem {
  if (name === "pack-store") return packStoreSystem(d1);
  if (name === "served") return servedSystem(d1);
  return name === "edgeq" ? edgeqSystem(d1) : name === "packs" ? packsSystem(d1) : baselineSystem(d1);
}

// ------------------------------------------------------------------------------------------------------
// Cost: a task's whole life, metered from D1's own `meta`.

export type Scenario = "success" | "success-dedupe" | "retried" | "dead" | "dead-permanent";

export const SCENARIOS: Record<Scenario, string> = {
  success: "enqueue → lease → complete",
  "success-dedupe": "the same, with a dedupe key",
  retried: "enqueue → lease → fail (retry) → lease → complete",
  dead: "enqueue → (lease → fail) × 3 attempts → dead",
  "dead-permanent": "enqueue → lease → fail (permanent) → dead",
};

export interface CostResult {
  tasks: number;
  total: D1Usage;
  phases: Record<string, D1Usage>;
}

function must(what: string, got: number, want: number) {
  if (got !== want) throw new Error(`${what}: got ${got}, expected ${want}`);
}

/** Runs `tasks` tasks through one scenario in rounds of `batch`; returns D1's rows and statements. */
export async function runCostScenario(
  d1: D1Database,
  system: SystemName,
  scenario: Scenario,
  batch: number,
  tasks: number,
  queue: string,
): Promise<CostResult> {
  const meter = meteredD1(d1);
  const sys = systemFor(system, meter.db);
  const phases: Record<string, D1Usage> = {};
  let clock = 1_800_000_000_000;
  const phase = async <T>(name: string, fn: () => Promise<T>): Promise<T> => {
    meter.reset();
    const out = await fn();
    const p = (phases[name] ??= { rowsWritten: 0, rowsRead: 0, statements: 0 });
    p.rowsWritten += meter.usage.rowsWritten;
    p.rowsRead += meter.usage.rowsRead;
    p.statements += meter.usage.statements;
    return out;
  };
  const leaseAll = async () => {
    const got = await phase("lease", () => sys.lease(queue, batch, ++clock));
    must(`${system} ${scenario} lease`, got.length, batch);
    return got;
  };
  for (let done = 0; done < tasks; done += batch) {
    await phase("enqueue", () =>
      sys.enqueue(queue, batch, { dedupe: scenario === "success-dedupe", first: done }, ++clock),
    );
    let held = await leaseAll();
    if (scenario === "retried") {
      must("fail", await phase("fail", () => sys.fail(held, ++clock, false)), batch);
      held = await leaseAll();
    }
    if (scenario === "dead") {
      for (let attempt = 1; attempt < 3; attempt++) {
        must("fail", await phase("fail", () => sys.fail(held, ++clock, false)), batch);
        held = await leaseAll();
      }
    }
    if (scenario === "dead" || scenario === "dead-permanent") {
      must("fail", await phase("fail", () => sys.fail(held, ++clock, scenario === "dead-permanent")), batch);
    } else {
      must("complete", await phase("complete", () => sys.complete(held, ++clock)), batch);
    }
  }
  const total = { rowsWritten: 0, rowsRead: 0, statements: 0 };
  for (const p of Object.values(phases)) {
    total.rowsWritten += p.rowsWritten;
    total.rowsRead += p.rowsRead;
    total.statements += p.statements;
  }
  return { tasks, total, phases };
}

// ------------------------------------------------------------------------------------------------------
// Throughput: enqueue in bulk, then burn a queue down (lease `batch`, complete them, repeat).

/** Enqueues `count` tasks in calls of `chunk` (10,000 is the API's most per call); returns D1's usage. */
export async function bulkEnqueue(
  d1: D1Database,
  system: SystemName,
  queue: string,
  count: number,
  chunk = 10_000,
): Promise<D1Usage> {
  const meter = meteredD1(d1);
  const sys = systemFor(system, meter.db);
  for (let first = 0; first < count; first += chunk) {
    await sys.enqueue(queue, Math.min(chunk, count - first), { first }, Date.now());
  }
  return { ...meter.usage };
}

/** Leases `count` tasks (in leases of at most 100) and keeps them in flight. */
export async function holdTasks(d1: D1Database, queue: string, count: number): Promise<number> {
  const sys = edgeqSystem(d1);
  let held = 0;
  while (held < count) {
    const got = await sys.lease(queue, Math.min(100, count - held), Date.now());
    if (got.length === 0) break;
    held += got.length;
  }
  return held;
}

/** Leases and completes until the queue is empty or `maxTasks` are done; returns how many were done. */
/**
 * Leases and completes up to `maxTasks` tasks of `queue`, `batch` at a time, one call after another. With
 * `carry`, each completion carries the next lease (one call per batch: `completeThenLease`); every task
 * leased here is completed here either way.
 */
export async function burnDown(
  d1: D1Database,
  system: SystemName,
  queue: string,
  batch: number,
  maxTasks: number,
  carry = false,
) {
  const sys = systemFor(system, d1);
  let done = 0;
  if (carry) {
    if (!sys.completeThenLease) throw new Error(`${system}: no ack that carries the next lease`);
    let held = await sys.lease(queue, Math.min(batch, maxTasks), Date.now());
    while (held.length > 0) {
      const left = maxTasks - done - held.length;
      if (left <= 0) {
        must(`${system} burn-down complete`, await sys.complete(held, Date.now()), held.length);
        return done + held.length;
      }
      const next = await sys.completeThenLease(queue, held, Math.min(batch, left), Date.now());
      must(`${system} burn-down complete`, next.completed, held.length);
      done += held.length;
      held = next.held;
    }
    return done;
  }
  while (done < maxTasks) {
    const held = await sys.lease(queue, Math.min(batch, maxTasks - done), Date.now());
    if (held.length === 0) break;
    must(`${system} burn-down complete`, await sys.complete(held, Date.now()), held.length);
    done += held.length;
  }
  return done;
}

// ------------------------------------------------------------------------------------------------------
// Growth: what one lease costs with many tasks pending.

export interface LeaseProbe {
  leases: number;
  batch: number;
  rowsReadPerLease: number;
  rowsWrittenPerLease: number;
  msPerLease: number;
}

/** `leases` times: lease `batch` (metered and timed), then complete them (neither), through `system`. */
export async function probeLeases(
  d1: D1Database,
  queue: string,
  batch: number,
  leases: number,
  system: SystemName = "edgeq",
): Promise<LeaseProbe> {
  const meter = meteredD1(d1);
  const metered = systemFor(system, meter.db);
  const plain = systemFor(system, d1);
  let rowsRead = 0;
  let rowsWritten = 0;
  let ms = 0;
  for (let k = 0; k < leases; k++) {
    meter.reset();
    const t0 = performance.now();
    const held = await metered.lease(queue, batch, Date.now());
    ms += performance.now() - t0;
    must("probe lease", held.length, batch);
    rowsRead += meter.usage.rowsRead;
    rowsWritten += meter.usage.rowsWritten;
    await plain.complete(held, Date.now());
  }
  return {
    leases,
    batch,
    rowsReadPerLease: rowsRead / leases,
    rowsWrittenPerLease: rowsWritten / leases,
    msPerLease: ms / leases,
  };
}

/** One cron reap pass (nothing expired): the rows it reads with the queue as it is. */
export async function probeReap(d1: D1Database): Promise<D1Usage & { ms: number }> {
  const meter = meteredD1(d1);
  const t0 = performance.now();
  await reapExpiredLeases(openDb(meter.db), Date.now());
  return { ...meter.usage, ms: performance.now() - t0 };
}
