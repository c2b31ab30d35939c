/**
 * Sections 1 and 2: D1 cost per task (edgeq and the baseline jobs table, from D1's own meta) and the
 * engine burn-down inside workerd, with the same engine code on raw SQLite in Node as the ceiling.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { D1Usage } from "../test/support/metered-d1";
import { bulkEnqueue, burnDown, SCENARIOS, type CostResult, type Scenario, type SystemName } from "./engine-ops";
import { sqliteD1 } from "./sqlite-d1";
import { spread, type Spread } from "./stats";
import { migrationStatements, type WorkerdBench } from "./workerd-host";

export const BATCHES = [1, 10, 100];

export interface CostRow {
  system: SystemName;
  scenario: Scenario;
  batch: number;
  tasks: number;
  perTask: D1Usage;
  phases: Record<string, D1Usage>;
}

export async function runCostSection(bench: WorkerdBench, tasks: number): Promise<CostRow[]> {
  const rows: CostRow[] = [];
  for (const system of ["edgeq", "baseline"] as const) {
    for (const scenario of Object.keys(SCENARIOS) as Scenario[]) {
      for (const batch of BATCHES) {
        const r = await bench.call<CostResult>({
          op: "cost",
          system,
          scenario,
          batch,
          tasks,
          queue: `cost-${system}-${scenario}-${batch}`,
        });
        rows.push({
          system,
          scenario,
          batch,
          tasks,
          perTask: {
            rowsWritten: r.total.rowsWritten / tasks,
            rowsRead: r.total.rowsRead / tasks,
            statements: r.total.statements / tasks,
          },
          phases: r.phases,
        });
      }
    }
  }
  return rows;
}

export interface BurnRow {
  where: "workerd" | "node:sqlite";
  system: SystemName;
  /** Each completion carried the next lease (one database call per batch). */
  carry?: boolean;
  batch: number;
  tasks: number;
  segments: number;
  /** Tasks done: fewer than `tasks` when the run hit its time cap. */
  done: number;
  capped: boolean;
  tasksPerS: Spread;
  enqueueTasksPerS: number;
  /** Tasks per enqueue call when not 10,000 (the served store's burn-down enqueues as a producer of batches). */
  enqueueCall?: number;
}

/** Options every burn-down takes. */
export interface BurnOptions {
  tasks: number;
  segments: number;
  /** Stop after this many seconds even if tasks are left (a bound on the run's time). */
  capS: number;
  /** Tasks per enqueue call (default 10,000, the API's most per call). */
  enqueueCall?: number;
}

interface Burned {
  rates: number[];
  enqueueRate: number;
  done: number;
  capped: boolean;
}

/**
 * Burns a pre-enqueued queue down in `segments` consecutive measured slices. A slice cut short by the
 * time cap still counts as a measurement (its own tasks over its own time).
 */
async function burnSegments(
  enqueue: (queue: string, count: number) => Promise<void>,
  burn: (queue: string, batch: number, maxTasks: number) => Promise<number>,
  queue: string,
  batch: number,
  opts: BurnOptions,
): Promise<Burned> {
  const { tasks, segments } = opts;
  const e0 = performance.now();
  await enqueue(queue, tasks);
  const enqueueRate = (tasks / (performance.now() - e0)) * 1000;
  const deadline = performance.now() + opts.capS * 1000;
  const per = Math.ceil(tasks / segments);
  // Calls of at most 5,000 tasks (so no request to workerd runs for minutes), fewer at batch 1 so the cap is kept.
  const perCall = Math.min(5_000, batch * 500);
  const rates: number[] = [];
  let total = 0;
  for (let s = 0; s < segments && total < tasks; s++) {
    const want = Math.min(per, tasks - s * per);
    const t0 = performance.now();
    let done = 0;
    while (done < want && performance.now() < deadline) {
      const got = await burn(queue, batch, Math.min(perCall, want - done));
      if (got === 0) throw new Error(`burn-down ${queue}: queue empty after ${total + done} of ${tasks}`);
      done += got;
    }
    if (done > 0) rates.push((done / (performance.now() - t0)) * 1000);
    total += done;
    if (performance.now() >= deadline) break;
  }
  return { rates, enqueueRate, done: total, capped: total < tasks };
}

export async function runWorkerdBurn(
  bench: WorkerdBench,
  system: SystemName,
  batch: number,
  opts: BurnOptions,
  carry = false,
): Promise<BurnRow> {
  const burned = await burnSegments(
    async (queue, count) => {
      for (let first = 0; first < count; first += 10_000) {
        const chunk = opts.enqueueCall;
        await bench.call({ op: "enqueue", system, queue, count: Math.min(10_000, count - first), chunk });
      }
    },
    async (queue, b, maxTasks) =>
      (await bench.call<{ done: number }>({ op: "burn", system, queue, batch: b, maxTasks, carry })).done,
    `burn-${system}-${batch}${carry ? "-carry" : ""}`,
    batch,
    opts,
  );
  return {
    where: "workerd",
    system,
    ...(carry ? { carry } : {}),
    batch,
    tasks: opts.tasks,
    segments: opts.segments,
    done: burned.done,
    capped: burned.capped,
    tasksPerS: spread(burned.rates),
    enqueueTasksPerS: burned.enqueueRate,
    ...(opts.enqueueCall ? { enqueueCall: opts.enqueueCall } : {}),
  };
}

/** The same engine code on node:sqlite (a file in a temporary directory, WAL, synchronous=FULL). */
export async function runSqliteBurn(root: string, batch: number, opts: BurnOptions): Promise<BurnRow> {
  const dir = mkdtempSync(join(tmpdir(), "edgeq-bench-sqlite-"));
  const db = sqliteD1(join(dir, "ceiling.sqlite"));
  try {
    for (const s of migrationStatements(root)) db.sqlite.exec(s);
    const burned = await burnSegments(
      async (queue, count) => void (await bulkEnqueue(db.d1, "edgeq", queue, count)),
      (queue, b, maxTasks) => burnDown(db.d1, "edgeq", queue, b, maxTasks),
      `ceiling-${batch}`,
      batch,
      opts,
    );
    return {
      where: "node:sqlite",
      system: "edgeq",
      batch,
      tasks: opts.tasks,
      segments: opts.segments,
      done: burned.done,
      capped: burned.capped,
      tasksPerS: spread(burned.rates),
      enqueueTasksPerS: burned.enqueueRate,
    };
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The SQLite library version node:sqlite links. */
export function nodeSqliteVersion(): string {
  const db = sqliteD1(":memory:");
  try {
    return (db.sqlite.prepare("SELECT sqlite_version() AS v").get() as { v: string }).v;
  } finally {
    db.close();
  }
}
