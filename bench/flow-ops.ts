/**
 * Flow control's bench operations (section 10, bench/section-flow.ts), run inside the bench worker against
 * real local D1 with the engine's own functions: keyed enqueues, a queue's flow config, leases of one task
 * in a row timed for fairness, and one metered life of 100 tasks for rows written per task.
 */
import { openDb } from "../src/db/client";
import type { FlowConfig } from "../src/contracts/flow";
import { completeTasks } from "../src/engine/complete";
import { enqueueTasks } from "../src/engine/enqueue";
import { leaseTasks } from "../src/engine/lease";
import { putQueueConfig } from "../src/engine/queue-config";
import { meteredD1, type D1Usage } from "../test/support/metered-d1";

/** Tasks per enqueue call: the engine's largest (MAX_ENQUEUE_TASKS), so a million takes 100 calls. */
const CHUNK = 10_000;

export interface FlowEnqueueRequest {
  queue: string;
  count: number;
  /** Keys `${prefix}0` … `${prefix}${keys - 1}`, round-robin; 0: unkeyed tasks. */
  keys: number;
  prefix: string;
}

/** Enqueues `count` tasks over `keys` keys (or unkeyed), now; what D1 metered for them. */
export async function flowEnqueue(d1: D1Database, req: FlowEnqueueRequest): Promise<D1Usage> {
  const meter = meteredD1(d1);
  const db = openDb(meter.db);
  for (let first = 0; first < req.count; first += CHUNK) {
    const n = Math.min(CHUNK, req.count - first);
    const tasks = Array.from({ length: n }, (_, i) => ({
      payload: { i: first + i },
      key: req.keys > 0 ? `${req.prefix}${(first + i) % req.keys}` : undefined,
    }));
    await enqueueTasks(db, req.queue, tasks, Date.now());
  }
  return { ...meter.usage };
}

/** Sets (or clears, null) a queue's flow config. */
export async function flowConfig(d1: D1Database, queue: string, flow: FlowConfig | null): Promise<void> {
  await putQueueConfig(openDb(d1), queue, { flow }, Date.now(), []);
}

/** Where each task of key `key` was handed out: the 1-based number of the lease (of `max` tasks, each completed
 * at once) that took it, counted from the first lease after the call starts; at most `maxLeases` leases. */
export async function flowWaits(
  d1: D1Database,
  req: { queue: string; key: string; tasks: number; max: number; maxLeases: number },
): Promise<{ waits: number[]; leases: number; ms: number }> {
  const db = openDb(d1);
  const waits: number[] = [];
  let leases = 0;
  const t0 = performance.now();
  while (waits.length < req.tasks && leases < req.maxLeases) {
    const now = Date.now();
    const leased = await leaseTasks(db, { queue: req.queue, max: req.max, visibilityTimeoutS: 300, holder: "b" }, now);
    leases++;
    if (leased.length === 0) break;
    for (const t of leased) if (t.flowKey === req.key) waits.push(leases);
    await completeTasks(
      db,
      leased.map((t) => ({ id: t.id, leaseToken: t.leaseToken! })),
      now,
    );
  }
  return { waits, leases, ms: performance.now() - t0 };
}

/** Rows written per task of one life at batch 100 (enqueue, lease, complete) on a fresh queue. */
export async function flowLife(
  d1: D1Database,
  req: { queue: string; keyed: boolean; flow: FlowConfig | null },
): Promise<{ enqueue: number; lease: number; complete: number; perTask: number }> {
  if (req.flow) await flowConfig(d1, req.queue, req.flow);
  const meter = meteredD1(d1);
  const db = openDb(meter.db);
  const now = Date.now();
  await enqueueTasks(
    db,
    req.queue,
    Array.from({ length: 100 }, (_, i) => ({ payload: { i }, key: req.keyed ? `k${i % 10}` : undefined })),
    now,
  );
  const enqueue = meter.usage.rowsWritten;
  meter.reset();
  const leased = await leaseTasks(db, { queue: req.queue, max: 100, visibilityTimeoutS: 300, holder: "b" }, now + 1);
  if (leased.length !== 100) throw new Error(`flow life: leased ${leased.length} of 100`);
  const lease = meter.usage.rowsWritten;
  meter.reset();
  await completeTasks(
    db,
    leased.map((t) => ({ id: t.id, leaseToken: t.leaseToken! })),
    now + 2,
  );
  const complete = meter.usage.rowsWritten;
  return { enqueue, lease, complete, perTask: (enqueue + lease + complete) / 100 };
}
