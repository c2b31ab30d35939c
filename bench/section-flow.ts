/**
 * Section 10: flow control by key (docs/flow-control.md, issue 30's figures), in a fresh workerd + local D1:
 * - fairness: key A enqueues `fairA` tasks, then key B 10 at the same priority; leases of one task in a row
 *   (each completed at once): in which lease each B task is handed out, with fair shares and without;
 * - a lease of 100 over `keys` active keys at `pending` pending (a flow queue with fair shares and a
 *   concurrency limit per key), against a lease of 100 of unkeyed tasks on a plain queue of the same size in
 *   the same database: ms and rows read per lease;
 * - rows written per task of a life at batch 100 (enqueue, lease, complete): unkeyed on a plain queue, keyed
 *   on a plain queue, keyed on a flow queue, unkeyed on a flow queue.
 */
import type { D1Usage } from "../test/support/metered-d1";
import type { LeaseProbe } from "./engine-ops";
import { percentile } from "./stats";
import { startWorkerdBench, type WorkerdBench } from "./workerd-host";

/** Leases probed per size: each of 100, completed at once (the growth section's probe). */
const PROBE_LEASES = 20;

/** B's tasks: the 10. */
const B_TASKS = 10;

export interface FlowOptions {
  fairA: number;
  pending: number;
  keys: number;
  /** Leases of one without fair shares before B is given up on (its wait is then "more than" this). */
  unfairCap: number;
  log: (line: string) => void;
}

export interface FairnessRow {
  fair: boolean;
  waits: number[];
  leases: number;
  p50: number | null;
  p99: number | null;
}

export interface FlowSection {
  fairA: number;
  fairness: FairnessRow[];
  pending: number;
  keys: number;
  enqueue: { keyed: EnqueueUsage; unkeyed: EnqueueUsage };
  keyedLease: LeaseProbe;
  unkeyedLease: LeaseProbe;
  life: Record<string, { enqueue: number; lease: number; complete: number; perTask: number }>;
}

/** What a section enqueue wrote and read, and its time from Node. */
interface EnqueueUsage {
  rowsRead: number;
  rowsWritten: number;
  ms: number;
}

async function enqueue(
  bench: WorkerdBench,
  queue: string,
  count: number,
  keys: number,
  prefix: string,
): Promise<EnqueueUsage> {
  let rowsRead = 0;
  let rowsWritten = 0;
  const t0 = performance.now();
  // Calls of 100,000 tasks: each a bench request well under workerd's time limits.
  for (let first = 0; first < count; first += 100_000) {
    const usage = await bench.call<D1Usage>({
      op: "flow-enqueue",
      queue,
      count: Math.min(100_000, count - first),
      keys,
      prefix,
    });
    rowsRead += usage.rowsRead;
    rowsWritten += usage.rowsWritten;
  }
  return { rowsRead, rowsWritten, ms: performance.now() - t0 };
}

export async function runFlowSection(root: string, opts: FlowOptions): Promise<FlowSection> {
  const bench = await startWorkerdBench(root);
  try {
    const life: FlowSection["life"] = {};
    const flow = { fair: true, default: { concurrency: 5 } };
    // 10 keys of 10 tasks each in one lease of 100: a limit of 50 leaves them all room.
    const lifeFlow = { fair: true, default: { concurrency: 50 } };
    life["unkeyed, plain queue"] = await bench.call({ op: "flow-life", queue: "life-plain", keyed: false, flow: null });
    life["keyed, plain queue"] = await bench.call({ op: "flow-life", queue: "life-keyed", keyed: true, flow: null });
    life["keyed, flow queue"] = await bench.call({ op: "flow-life", queue: "life-flow", keyed: true, flow: lifeFlow });
    life["unkeyed, flow queue"] = await bench.call({
      op: "flow-life",
      queue: "life-flow-u",
      keyed: false,
      flow: lifeFlow,
    });
    opts.log(`flow: rows written per task ${JSON.stringify(Object.values(life).map((l) => l.perTask))}`);

    const fairness: FairnessRow[] = [];
    for (const fair of [true, false]) {
      const queue = `fair-${fair}`;
      await bench.call({ op: "flow-config", queue, flow: { fair } });
      await enqueue(bench, queue, opts.fairA, 1, "A");
      await enqueue(bench, queue, B_TASKS, 1, "B");
      const maxLeases = fair ? opts.fairA + B_TASKS : opts.unfairCap;
      const r = await bench.call<{ waits: number[]; leases: number }>({
        op: "flow-waits",
        queue,
        key: "B0",
        tasks: B_TASKS,
        max: 1,
        maxLeases,
      });
      const served = r.waits.length === B_TASKS;
      fairness.push({
        fair,
        waits: r.waits,
        leases: r.leases,
        p50: served ? percentile(r.waits, 50) : null,
        p99: served ? percentile(r.waits, 99) : null,
      });
      opts.log(
        `flow: fair ${fair}: B's ${r.waits.length} of ${B_TASKS} served in leases ${r.waits.join(",")} (${r.leases} leases)`,
      );
    }

    const keyed = await enqueue(bench, "flow-big", opts.pending, opts.keys, "t");
    await bench.call({ op: "flow-config", queue: "flow-big", flow });
    opts.log(`flow: enqueued ${opts.pending} keyed tasks over ${opts.keys} keys in ${(keyed.ms / 1000).toFixed(1)} s`);
    const unkeyed = await enqueue(bench, "plain-big", opts.pending, 0, "");
    opts.log(`flow: enqueued ${opts.pending} unkeyed tasks in ${(unkeyed.ms / 1000).toFixed(1)} s`);
    const keyedLease = await bench.call<LeaseProbe>({
      op: "probe-lease",
      queue: "flow-big",
      batch: 100,
      leases: PROBE_LEASES,
    });
    const unkeyedLease = await bench.call<LeaseProbe>({
      op: "probe-lease",
      queue: "plain-big",
      batch: 100,
      leases: PROBE_LEASES,
    });
    opts.log(
      `flow: lease 100 at ${opts.pending}: keyed ${keyedLease.msPerLease.toFixed(1)} ms, ${keyedLease.rowsReadPerLease.toFixed(0)} rows read; ` +
        `unkeyed ${unkeyedLease.msPerLease.toFixed(1)} ms, ${unkeyedLease.rowsReadPerLease.toFixed(0)} rows read`,
    );
    return {
      fairA: opts.fairA,
      fairness,
      pending: opts.pending,
      keys: opts.keys,
      enqueue: { keyed, unkeyed },
      keyedLease,
      unkeyedLease,
      life,
    };
  } finally {
    await bench.dispose();
  }
}
