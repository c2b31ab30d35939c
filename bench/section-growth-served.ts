/**
 * Section 5, the store as served: the same lease probes as the rows-only growth (section-growth.ts) through
 * the store every shard serves (`taskStoreOn`, src/shards/shard-set.ts: the hybrid of rows and packs), with
 * the pending tasks in packs — enqueued as multi-task calls, as a producer of batches would (1,000,000 tasks
 * are 10,000 packs of 100) — and mixed: half in rows, half in packs, one queue. Each layout at each size in a
 * fresh workerd and local D1, as the rows-only probes.
 */
import type { D1Usage } from "../test/support/metered-d1";
import type { LeaseProbe } from "./engine-ops";
import type { TickProbe } from "./tick-ops";
import { startWorkerdBench, type WorkerdBench } from "./workerd-host";

/** Where the pending tasks are: all in packs, or half in rows and half in packs. */
export type ServedLayout = "packs" | "mixed";

export const SERVED_LAYOUTS: ServedLayout[] = ["packs", "mixed"];

/**
 * Tasks per enqueue call when seeding packs: 10,000 (the API's most per call) makes 100 full packs of 100 per
 * call — the very packs a producer's calls of 100 make, seeded in a hundredth of the calls (so 1,000,000 take
 * seconds, not minutes: each call is a few D1 round trips whatever its size).
 */
const SEED_CALL = 10_000;

/**
 * The mixed layout's step: 1,000 tasks in rows, then 1,000 in packs, and so on. The lease takes the layout
 * whose front comes first, so the probes' leases (a few thousand tasks) alternate between the layouts.
 */
const MIXED_STEP = 1_000;

export interface ServedGrowthRow {
  layout: ServedLayout;
  pending: number;
  /** Where the tasks ended up (before the probes): packs, the tasks they hold, rows. */
  counts: { packs: number; packTasks: number; rows: number };
  enqueue: { ms: number; tasksPerS: number; rowsWrittenPerTask: number; tasksPerCall: number };
  /** Leases of 1, then of 100, through the served store's `leaseAnswers` (each completed, not counted). */
  leases: LeaseProbe[];
  /** One whole cron tick with the queue as it is. */
  tick: TickProbe;
}

export interface ServedGrowthOptions {
  pending: number;
  leases: number;
  layout: ServedLayout;
}

/** One size in one layout, in a fresh workerd: seed, count, probe the leases, run a tick. */
export async function runServedGrowth(root: string, opts: ServedGrowthOptions): Promise<ServedGrowthRow> {
  const bench = await startWorkerdBench(root);
  try {
    const queue = `growth-served-${opts.layout}-${opts.pending}`;
    // As the rows-only probes: the tasks the probes consume on top, so `pending` are left for the tick.
    const total = opts.pending + opts.leases * 101;
    const t0 = performance.now();
    const usage = await seed(bench, opts.layout, queue, total);
    const ms = performance.now() - t0;
    const counts = await bench.call<ServedGrowthRow["counts"]>({ op: "layout-counts", queue });
    const leases: LeaseProbe[] = [];
    for (const batch of [1, 100]) {
      leases.push(
        await bench.call<LeaseProbe>({ op: "probe-lease", queue, batch, leases: opts.leases, system: "served" }),
      );
    }
    const tick = await bench.call<TickProbe>({ op: "tick" });
    return {
      layout: opts.layout,
      pending: opts.pending,
      counts,
      enqueue: {
        ms,
        tasksPerS: (total / ms) * 1000,
        rowsWrittenPerTask: usage.rowsWritten / total,
        tasksPerCall: opts.layout === "packs" ? SEED_CALL : MIXED_STEP,
      },
      leases,
      tick,
    };
  } finally {
    await bench.dispose();
  }
}

async function seed(bench: WorkerdBench, layout: ServedLayout, queue: string, total: number): Promise<D1Usage> {
  const usage: D1Usage = { rowsWritten: 0, rowsRead: 0, statements: 0 };
  // Bench calls of at most 20,000 tasks, so no request to workerd runs for minutes.
  const perCall = 20_000;
  for (let first = 0; first < total; first += perCall) {
    const count = Math.min(perCall, total - first);
    const u =
      layout === "packs"
        ? await bench.call<D1Usage>({ op: "enqueue", system: "served", queue, count, chunk: SEED_CALL })
        : await bench.call<D1Usage>({ op: "enqueue-mixed", queue, count, step: MIXED_STEP });
    usage.rowsWritten += u.rowsWritten;
    usage.rowsRead += u.rowsRead;
    usage.statements += u.statements;
  }
  return usage;
}
