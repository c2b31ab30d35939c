/**
 * The pack store's share of the bill (src/engine/packs/, not served yet): the same successful workload as the
 * bill's (`tasks` tasks, enqueued, leased and completed in calls of `batch`, payload `{ i }`), run through the
 * task-store port on the bench's metered D1 — the D1 rows and bytes a served pack store would bill. The
 * requests (Worker, Durable Objects) are not the store's: section-bill.ts takes them from the served path's
 * run of the same batch, so the projection's every figure is measured, none assumed.
 */
import { openDb } from "../src/db/client";
import { DEFAULT_QUEUE_CONFIG } from "../src/engine/queue-config";
import { packTaskStore } from "../src/engine/packs/pack-store";
import { meteredD1 } from "../test/support/metered-d1";

export interface PackBillRequest {
  queue: string;
  batch: number;
  tasks: number;
}

export interface PackBillCounts {
  tasks: number;
  d1: { rowsWritten: number; rowsRead: number; statements: number };
  /** The retention prune of these tasks, when the pack store has one (null: not built yet, not counted). */
  prune: { rowsWritten: number; rowsRead: number; pruned: number } | null;
  bytesKept: number;
  retentionS: number;
}

async function sizeOf(db: D1Database): Promise<number> {
  const r = await db.prepare("SELECT 1").run();
  return (r.meta as { size_after?: number }).size_after ?? 0;
}

export async function runPackBill(d1: D1Database, req: PackBillRequest): Promise<PackBillCounts> {
  const meter = meteredD1(d1);
  const store = packTaskStore(openDb(meter.db));
  const sizeBefore = await sizeOf(d1);
  let now = Date.now();
  for (let done = 0; done < req.tasks; done += req.batch) {
    const tasks = Array.from({ length: req.batch }, (_, i) => ({ payload: { i: done + i } }));
    await store.enqueueTasks(req.queue, tasks, ++now);
    const held = await store.leaseTasks(
      { queue: req.queue, max: req.batch, visibilityTimeoutS: 60, holder: "bill" },
      ++now,
    );
    if (held.length !== req.batch) throw new Error(`bill-packs: leased ${held.length} of ${req.batch}`);
    const acked = await store.completeTasks(
      held.map((t) => ({ id: t.id, leaseToken: t.leaseToken! })),
      ++now,
    );
    if (!acked.every((o) => o.ok)) throw new Error("bill-packs: a completion was refused");
  }
  const d1Usage = { ...meter.usage };
  const bytesKept = (await sizeOf(d1)) - sizeBefore;
  const retentionS = DEFAULT_QUEUE_CONFIG.retention_s;
  let prune: PackBillCounts["prune"] = null;
  const prunable = store as Partial<{ pruneByRetention(now: number): Promise<{ pruned: number }> }>;
  if (typeof prunable.pruneByRetention === "function") {
    meter.reset();
    let pruned = 0;
    for (let round = 0; round < 100; round++) {
      const step = await prunable.pruneByRetention(now + retentionS * 1000 + 120_000);
      pruned += step.pruned;
      if (step.pruned === 0) break;
    }
    prune = { rowsWritten: meter.usage.rowsWritten, rowsRead: meter.usage.rowsRead, pruned };
  }
  return {
    tasks: req.tasks,
    d1: { rowsWritten: d1Usage.rowsWritten, rowsRead: d1Usage.rowsRead, statements: d1Usage.statements },
    prune,
    bytesKept,
    retentionS,
  };
}
