/**
 * Section 7's work inside workerd: burn-down over several D1 databases, each behind the latency model
 * (bench/d1-latency-model.ts). Two layouts:
 *
 * - **shards**: `queues` queues, queue q placed on shard q mod S (a stable rule standing in for the
 *   placement directory); worker w serves queue w mod `queues`. A task never leaves its shard.
 * - **partitions**: one queue whose tasks are spread over K databases (evenly at enqueue). A lease is the
 *   shards' own `leaseFromPartitions` (src/shards/partitioned-lease.ts): it starts at a rotating partition
 *   and fills the batch from the next ones. Each task's id carries its partition as a slot (the shards'
 *   own addressing, src/shards/task-slot.ts), so its complete goes to that partition alone.
 *
 * Every worker loops `lease(batch)` → `complete(all of them)` through the real engine functions until
 * the time is up or its queue is empty. Completed tasks are counted in buckets of `bucketMs` from the end
 * of the warm-up.
 */
import { openDb } from "../src/db/client";
import { completeTasks } from "../src/engine/complete";
import { enqueueTasks } from "../src/engine/enqueue";
import { leaseTasks } from "../src/engine/lease";
import type { TaskRow } from "../src/db/schema";
import { leaseFromPartitions, leaseStoredTasks } from "../src/shards/partitioned-lease";
import { d1TaskStore } from "../src/engine/d1-store";
import { decodeSlot, encodeSlot } from "../src/shards/task-slot";
import { ulid } from "ulid";
import { modelD1, modelStatsSince, type D1ModelParams, type D1ModelStats } from "./d1-latency-model";
import { bulkEnqueue } from "./engine-ops";
import { meteredD1 } from "../test/support/metered-d1";
import { pruneByRetention } from "../src/engine/purge";

export type ScaleLayout = "shards" | "partitions";

export interface ScaleEnqueueRequest {
  layout: ScaleLayout;
  /** Queue name prefix, unique per run. */
  tag: string;
  databases: number;
  queues: number;
  /** Tasks per queue (shards) or per partition (partitions). */
  perUnit: number;
}

export interface ScaleBurnRequest {
  layout: ScaleLayout;
  tag: string;
  databases: number;
  queues: number;
  workers: number;
  batch: number;
  warmupMs: number;
  measureMs: number;
  bucketMs: number;
  model: D1ModelParams;
}

export interface ScaleBurnResult {
  /** Tasks completed in each bucket of the measured window (each cycle's tasks spread over the cycle). */
  buckets: number[];
  /** Tasks completed in the measured window. */
  done: number;
  /** The measured window as it ran (shorter than measureMs if every queue ran dry). */
  measuredMs: number;
  ranDry: boolean;
  leases: number;
  /** Each database's model figures over the measured window. */
  databases: D1ModelStats[];
}

/** Queue names: one per shard-layout queue, one shared name for the partitioned queue. */
export const scaleQueue = (tag: string, layout: ScaleLayout, q: number) =>
  layout === "shards" ? `${tag}-q${q}` : `${tag}-hot`;

/** Enqueues straight into the local databases (not modelled, not timed): the backlog the burn eats. */
export async function scaleEnqueue(dbs: D1Database[], req: ScaleEnqueueRequest): Promise<number> {
  let total = 0;
  if (req.layout === "shards") {
    for (let q = 0; q < req.queues; q++) {
      await bulkEnqueue(dbs[q % req.databases]!, "edgeq", scaleQueue(req.tag, "shards", q), req.perUnit);
      total += req.perUnit;
    }
  } else {
    const queue = scaleQueue(req.tag, "partitions", 0);
    for (let k = 0; k < req.databases; k++) {
      const db = openDb(dbs[k]!);
      // 10,000 per call: the API's most per enqueue.
      for (let first = 0; first < req.perUnit; first += 10_000) {
        const tasks = Array.from({ length: Math.min(10_000, req.perUnit - first) }, (_, i) => ({
          id: idInPartition(k),
          payload: { i: first + i },
        }));
        await enqueueTasks(db, queue, tasks, Date.now());
      }
      total += req.perUnit;
    }
  }
  return total;
}

/**
 * A ULID carrying partition k as its slot (k + 1: slot 0 means "none"), the way the shards' own ids carry
 * theirs (src/shards/task-slot.ts), so a complete finds the task's partition from the id alone.
 */
const idInPartition = (k: number) => {
  const id = ulid();
  return id.slice(0, 10) + encodeSlot(k + 1) + id.slice(14);
};
const partitionOf = (id: string) => {
  const slot = decodeSlot(id);
  if (slot === null) throw new Error(`scale burn: task ${id} names no partition`);
  return slot - 1;
};

/** A lease's tasks, grouped by the partition they came from. */
interface Taken {
  part: number;
  rows: TaskRow[];
}

export async function scaleBurn(raw: D1Database[], req: ScaleBurnRequest): Promise<ScaleBurnResult> {
  const now = () => Date.now();
  const modelled = raw.slice(0, req.databases).map((d, i) => modelD1(d, req.model, now, i + 1));
  const dbs = modelled.map((m) => openDb(m.db));
  const t0 = now();
  const measureFrom = t0 + req.warmupMs;
  const end = measureFrom + req.measureMs;
  const buckets = new Array<number>(Math.ceil(req.measureMs / req.bucketMs)).fill(0);
  // Each database's figures at the start and at the end of the window, taken by timers: a hold that
  // straddles either edge counts on one side only (one hold, ≪ the window).
  let first: D1ModelStats[] | null = null;
  let last: D1ModelStats[] | null = null;
  const copy = () => modelled.map((m) => ({ ...m.stats }));
  const takeSnapshot = () => (first ??= copy());
  let leases = 0;
  let lastDone = measureFrom;
  const dry = new Set<number>();
  let rotation = 0;

  /**
   * Counts a cycle's `n` tasks spread evenly over the cycle (lease sent → complete answered), so the window
   * and each bucket get the share of it that falls inside them. Counting whole cycles of 100 tasks at their
   * end made a window's count jump by 100s (a 1-database window holds only a few dozen cycles).
   */
  const record = (n: number, from: number) => {
    const to = now();
    const span = Math.max(1, to - from);
    for (let b = 0; b < buckets.length; b++) {
      const lo = Math.max(from, measureFrom + b * req.bucketMs);
      const hi = Math.min(to, Math.min(end, measureFrom + (b + 1) * req.bucketMs));
      if (hi > lo) buckets[b]! += (n * (hi - lo)) / span;
    }
    if (to >= measureFrom) lastDone = Math.max(lastDone, Math.min(to, end));
  };

  const worker = async (w: number) => {
    while (now() < end) {
      const cycleFrom = now();
      let groups: Taken[];
      if (req.layout === "shards") {
        const q = w % req.queues;
        const queue = scaleQueue(req.tag, "shards", q);
        const rows = await leaseTasks(
          dbs[q % req.databases]!,
          { queue, max: req.batch, visibilityTimeoutS: 300, holder: "bench-scale" },
          now(),
        );
        groups = rows.length ? [{ part: q % req.databases, rows }] : [];
      } else {
        const rows = await leaseFromPartitions(
          dbs.map(d1TaskStore),
          scaleQueue(req.tag, "partitions", 0),
          { max: req.batch, visibilityTimeoutS: 300, holder: "bench-scale" },
          rotation++,
          now(),
          leaseStoredTasks,
        );
        const byPart = new Map<number, TaskRow[]>();
        for (const r of rows) {
          const k = partitionOf(r.id);
          byPart.set(k, [...(byPart.get(k) ?? []), r]);
        }
        groups = [...byPart].map(([part, rs]) => ({ part, rows: rs }));
      }
      leases += 1;
      if (groups.length === 0) {
        dry.add(w);
        return;
      }
      const acked = await Promise.all(
        groups.map(async (g) => {
          const out = await completeTasks(
            dbs[g.part]!,
            g.rows.map((r) => ({ id: r.id, leaseToken: r.leaseToken! })),
            now(),
          );
          const ok = out.filter((o) => o.ok).length;
          if (ok !== g.rows.length) throw new Error(`scale burn: ${ok} of ${g.rows.length} completed`);
          return ok;
        }),
      );
      record(
        acked.reduce((a, b) => a + b, 0),
        cycleFrom,
      );
    }
  };

  // The warm-up ends on a timer too, so the snapshot is taken even if no call finishes right then.
  const timers = [
    setTimeout(takeSnapshot, req.warmupMs),
    setTimeout(() => (last ??= copy()), req.warmupMs + req.measureMs),
  ];
  try {
    await Promise.all(Array.from({ length: req.workers }, (_, w) => worker(w)));
  } finally {
    for (const t of timers) clearTimeout(t);
  }
  const from = first ?? copy();
  const to = last ?? copy();
  const ranDry = dry.size > 0;
  const measuredMs = ranDry ? Math.max(1, lastDone - measureFrom) : req.measureMs;
  const done = buckets.reduce((a, b) => a + b, 0);
  return {
    buckets: ranDry ? buckets.slice(0, Math.max(1, Math.floor(measuredMs / req.bucketMs))) : buckets,
    done,
    measuredMs,
    ranDry,
    leases,
    databases: modelled.map((_, i) => modelStatsSince(from[i]!, to[i]!)),
  };
}

/** The D1 bindings of the bench worker in order: DB, DB_1, DB_2, … (the same naming the shards use). */
export function shardBindings(env: Record<string, unknown>): D1Database[] {
  const out: D1Database[] = [];
  if (env.DB) out.push(env.DB as D1Database);
  for (let i = 1; env[`DB_${i}`]; i++) out.push(env[`DB_${i}`] as D1Database);
  return out;
}

/** What one successful task's life and its pruning cost on D1, per call kind (the inputs of docs/scale.md). */
export interface ScaleProbe {
  batch: number;
  tasks: number;
  /** Per call of `batch` tasks: statements; per task: rows written and read. */
  calls: Record<
    "enqueue" | "lease" | "complete" | "prune",
    { statements: number; rowsWritten: number; rowsRead: number }
  >;
}

/**
 * Runs `tasks` tasks through enqueue → lease → complete in calls of `batch` on a fresh queue, then prunes
 * them past retention, metering D1's own `meta` per kind of call (test/support/metered-d1.ts).
 */
export async function scaleProbe(d1: D1Database, batch: number, tasks: number, queue: string): Promise<ScaleProbe> {
  const meter = meteredD1(d1);
  const db = openDb(meter.db);
  const sums = {
    enqueue: { statements: 0, rowsWritten: 0, rowsRead: 0, n: 0 },
    lease: { statements: 0, rowsWritten: 0, rowsRead: 0, n: 0 },
    complete: { statements: 0, rowsWritten: 0, rowsRead: 0, n: 0 },
    prune: { statements: 0, rowsWritten: 0, rowsRead: 0, n: 0 },
  };
  const metered = async <T>(kind: keyof typeof sums, fn: () => Promise<T>) => {
    meter.reset();
    const out = await fn();
    const s = sums[kind];
    s.statements += meter.usage.statements;
    s.rowsWritten += meter.usage.rowsWritten;
    s.rowsRead += meter.usage.rowsRead;
    s.n += 1;
    return out;
  };
  const now = Date.now();
  for (let done = 0; done < tasks; done += batch) {
    const input = Array.from({ length: batch }, (_, i) => ({ payload: { i: done + i } }));
    await metered("enqueue", () => enqueueTasks(db, queue, input, now));
    const rows = await metered("lease", () =>
      leaseTasks(db, { queue, max: batch, visibilityTimeoutS: 300, holder: "probe" }, now + 1),
    );
    await metered("complete", () =>
      completeTasks(
        db,
        rows.map((r) => ({ id: r.id, leaseToken: r.leaseToken! })),
        now + 2,
      ),
    );
  }
  // Past the default 7-day retention: every finished task of the probe goes.
  for (;;) {
    const { pruned } = await metered("prune", () => pruneByRetention(db, now + 8 * 24 * 3600 * 1000));
    if (pruned === 0) break;
  }
  const per = (kind: keyof typeof sums) => ({
    statements: sums[kind].statements / Math.max(1, sums[kind].n),
    rowsWritten: sums[kind].rowsWritten / tasks,
    rowsRead: sums[kind].rowsRead / tasks,
  });
  return {
    batch,
    tasks,
    calls: { enqueue: per("enqueue"), lease: per("lease"), complete: per("complete"), prune: per("prune") },
  };
}
