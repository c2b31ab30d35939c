/**
 * Section 5: growth. For each size, a fresh workerd + local D1 holding that many pending tasks (enqueued
 * through the engine in calls of 10,000): what one lease reads and takes, what a cron reap pass reads,
 * and — at the middle size — a lease with tasks in flight ahead of it (the live index's trade-off).
 */
import type { D1Usage } from "../test/support/metered-d1";
import type { LeaseProbe } from "./engine-ops";
import { startWorkerdBench } from "./workerd-host";

export interface GrowthRow {
  pending: number;
  enqueue: { ms: number; tasksPerS: number; rowsWrittenPerTask: number; rowsReadPerTask: number };
  leases: LeaseProbe[];
  reap: D1Usage & { ms: number };
  inFlight?: { held: number; probe: LeaseProbe };
}

export interface GrowthOptions {
  sizes: number[];
  leases: number;
  inFlightAt: number;
  inFlight: number;
  log: (line: string) => void;
}

export async function runGrowthSection(root: string, opts: GrowthOptions): Promise<GrowthRow[]> {
  const rows: GrowthRow[] = [];
  for (const pending of opts.sizes) {
    const bench = await startWorkerdBench(root);
    try {
      const queue = `growth-${pending}`;
      // The lease probes consume leases × (1 + 100) tasks: enqueue those too, so `pending` are left for the reap.
      const total = pending + opts.leases * 101;
      let written = 0;
      let read = 0;
      const t0 = performance.now();
      for (let first = 0; first < total; first += 10_000) {
        const usage = await bench.call<D1Usage>({
          op: "enqueue",
          system: "edgeq",
          queue,
          count: Math.min(10_000, total - first),
        });
        written += usage.rowsWritten;
        read += usage.rowsRead;
      }
      const ms = performance.now() - t0;
      const enqueue = {
        ms,
        tasksPerS: (total / ms) * 1000,
        rowsWrittenPerTask: written / total,
        rowsReadPerTask: read / total,
      };
      opts.log(`growth: enqueued ${total} tasks in ${(ms / 1000).toFixed(1)} s`);
      const leases: LeaseProbe[] = [];
      for (const batch of [1, 100]) {
        leases.push(await bench.call<LeaseProbe>({ op: "probe-lease", queue, batch, leases: opts.leases }));
      }
      const reap = await bench.call<D1Usage & { ms: number }>({ op: "probe-reap" });
      const row: GrowthRow = { pending, enqueue, leases, reap };
      if (pending === opts.inFlightAt) {
        // Tasks to hold in flight and for the probe to consume, so `pending` stay pending behind them.
        await bench.call({ op: "enqueue", system: "edgeq", queue, count: opts.inFlight + opts.leases * 100 });
        const { held } = await bench.call<{ held: number }>({ op: "hold", queue, count: opts.inFlight });
        const probe = await bench.call<LeaseProbe>({ op: "probe-lease", queue, batch: 100, leases: opts.leases });
        row.inFlight = { held, probe };
      }
      opts.log(
        `growth: ${pending} pending: lease 100 reads ${leases[1]!.rowsReadPerLease.toFixed(0)} rows, ` +
          `${leases[1]!.msPerLease.toFixed(2)} ms`,
      );
      rows.push(row);
    } finally {
      await bench.dispose();
    }
  }
  return rows;
}
