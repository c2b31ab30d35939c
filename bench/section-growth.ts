/**
 * Section 5: growth. For each size, a fresh workerd + local D1 holding that many pending tasks (enqueued
 * through the engine in calls of 10,000): what one lease reads and takes, what a cron reap pass reads,
 * what a whole cron tick (src/cron/tick.ts) reads and takes, how long a lease on another, small queue waits
 * while a tick runs, and — at the middle size — a lease with tasks in flight ahead of it (the live index's
 * trade-off).
 */
import type { D1Usage } from "../test/support/metered-d1";
import type { LeaseProbe } from "./engine-ops";
import { runServedGrowth, SERVED_LAYOUTS, type ServedGrowthRow } from "./section-growth-served";
import type { TickProbe } from "./tick-ops";
import { startWorkerdBench, type WorkerdBench } from "./workerd-host";

/** Tasks in the small queue leased while ticks run: more than QUIET_LEASES plus
 * the leases TICKS_WITH_LEASES ticks can overlap. */
const SIDE_TASKS = 2_000;

/** Ticks run one after another with leases beside each: one tick of ~30 ms overlaps one or two leases, so
 * ten give a sample to take a slowest from. */
const TICKS_WITH_LEASES = 10;

/** Leases of one task sent one after another while ticks run, each timed from Node (the client's view). */
export interface LeaseDuringTick {
  /** The last tick with leases beside it (the side queue's tasks are then part of what it reads). */
  tick: TickProbe;
  /** How many ticks ran with leases beside them, and the slowest of them (ms). */
  ticks?: number;
  slowestTickMs?: number;
  /** Milliseconds of each lease that started before its tick ended, in order. */
  leaseMs: number[];
  /** The same leases' milliseconds inside workerd, from the lease's start to its answer (its wait for D1
   * included, the request's dispatch to the bench worker not). */
  insideMs?: number[];
  /** The same leases with no tick running (QUIET_LEASES of them), for comparison. */
  quietMs?: number[];
}

/** Leases of the side queue timed with no tick running: the baseline the leases during ticks compare with. */
const QUIET_LEASES = 20;

export interface GrowthRow {
  pending: number;
  enqueue: { ms: number; tasksPerS: number; rowsWrittenPerTask: number; rowsReadPerTask: number };
  leases: LeaseProbe[];
  reap: D1Usage & { ms: number };
  /** One whole cron tick with the queue as it is (nothing expired). */
  tick: TickProbe;
  /** A second tick, with leases on a small queue sent while it ran. */
  duringTick: LeaseDuringTick;
  inFlight?: { held: number; probe: LeaseProbe };
  /** The same size through the store as served, the tasks in packs, and in packs and rows (section-growth-served.ts). */
  served?: ServedGrowthRow[];
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
      const tick = await bench.call<TickProbe>({ op: "tick" });
      await bench.call({ op: "enqueue", system: "edgeq", queue: `${queue}-side`, count: SIDE_TASKS });
      const duringTick = await leasesDuringTick(bench, `${queue}-side`);
      opts.log(
        `growth: ${pending} pending: a tick reads ${tick.rowsRead} rows in ${tick.ms.toFixed(0)} ms; ` +
          `${duringTick.leaseMs.length} leases during ${duringTick.ticks} ticks, slowest ${Math.max(...duringTick.leaseMs).toFixed(1)} ms`,
      );
      const row: GrowthRow = { pending, enqueue, leases, reap, tick, duringTick };
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
    const row = rows.at(-1)!;
    row.served = [];
    for (const layout of SERVED_LAYOUTS) {
      const served = await runServedGrowth(root, { pending, leases: opts.leases, layout });
      row.served.push(served);
      opts.log(
        `growth: served store, ${pending} pending in ${layout} (seeded in ${(served.enqueue.ms / 1000).toFixed(1)} s): ` +
          `lease 1 reads ${served.leases[0]!.rowsReadPerLease.toFixed(0)} rows, ${served.leases[0]!.msPerLease.toFixed(2)} ms; ` +
          `lease 100 reads ${served.leases[1]!.rowsReadPerLease.toFixed(0)} rows, ${served.leases[1]!.msPerLease.toFixed(2)} ms`,
      );
    }
  }
  return rows;
}

/** Runs TICKS_WITH_LEASES ticks one after another and, until each answers, leases one task at a time from
 * `side`, timing each lease from Node. */
async function leasesDuringTick(bench: WorkerdBench, side: string): Promise<LeaseDuringTick> {
  const quietMs: number[] = [];
  for (let i = 0; i < QUIET_LEASES; i++) quietMs.push((await bench.timed({ op: "lease-once", queue: side })).ms);
  const leaseMs: number[] = [];
  const insideMs: number[] = [];
  let tick: TickProbe | undefined;
  let slowestTickMs = 0;
  for (let i = 0; i < TICKS_WITH_LEASES; i++) {
    let done = false;
    const ticking = bench.call<TickProbe>({ op: "tick" }).finally(() => {
      done = true;
    });
    // The first lease is sent as the tick starts, so at least one runs beside it.
    do {
      const { ms, result } = await bench.timed<{ ms: number }>({ op: "lease-once", queue: side });
      leaseMs.push(ms);
      insideMs.push(result.ms);
      if (leaseMs.length >= SIDE_TASKS) throw new Error("growth: the side queue ran dry during the ticks");
    } while (!done);
    tick = await ticking;
    slowestTickMs = Math.max(slowestTickMs, tick.ms);
  }
  return { tick: tick!, ticks: TICKS_WITH_LEASES, slowestTickMs, leaseMs, insideMs, quietMs };
}
