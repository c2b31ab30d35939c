/**
 * The store AS SERVED — the one every shard's `Shard.store` is (`taskStoreOn`, src/shards/shard-set.ts: the
 * hybrid of src/engine/hybrid/, rows and packs side by side) — as a queue system the bench runs like the
 * others (bench/engine-ops.ts). Sections 2 and 5 burn down and lease through it beside the row engine's own
 * functions, so the speed goals of issue 32 are read off the store the Worker uses.
 */
import { openDb } from "../src/db/client";
import { taskStoreOn } from "../src/shards/shard-set";
import type { D1Usage } from "../test/support/metered-d1";
import { bulkEnqueue, type QueueSystem } from "./engine-ops";
import { portSystem } from "./pack-store-ops";

/**
 * Tasks per enqueue call of a producer of batches: an enqueue call of at least 2 plain tasks goes into packs
 * (src/engine/hybrid/route-enqueue.ts), and 100 is a pack's size (PACK_SLOTS), so each such call makes one
 * full pack — 1,000,000 tasks are 10,000 packs.
 */
export const SERVED_ENQUEUE_CALL = 100;

export function servedSystem(d1: D1Database): QueueSystem {
  return portSystem(taskStoreOn(openDb(d1)), "served store");
}

/**
 * `count` tasks into one queue in both layouts, half each, interleaved in steps of `step` tasks: `step` in
 * rows (the row store's enqueue, one call — the rows single-task or non-plain calls make), then `step` in packs
 * (the served store, one multi-task call: full packs of 100). Lease order then alternates between the layouts
 * every `step` tasks. Returns D1's usage of the whole.
 */
export async function enqueueMixed(d1: D1Database, queue: string, count: number, step: number): Promise<D1Usage> {
  const usage: D1Usage = { rowsWritten: 0, rowsRead: 0, statements: 0 };
  const add = (u: D1Usage) => {
    usage.rowsWritten += u.rowsWritten;
    usage.rowsRead += u.rowsRead;
    usage.statements += u.statements;
  };
  for (let first = 0; first < count; first += 2 * step) {
    const rows = Math.min(step, Math.ceil((count - first) / 2));
    add(await bulkEnqueue(d1, "edgeq", queue, rows));
    const packs = Math.min(step, count - first - rows);
    if (packs > 0) add(await bulkEnqueue(d1, "served", queue, packs));
  }
  return usage;
}

/** How many packs and rows hold `queue`'s tasks, and how many tasks its packs hold (live or not). */
export async function layoutCounts(
  d1: D1Database,
  queue: string,
): Promise<{ packs: number; packTasks: number; rows: number }> {
  const row = await d1
    .prepare(
      `SELECT (SELECT count(*) FROM packs WHERE queue = ?1) AS packs,
              (SELECT coalesce(sum(n), 0) FROM packs WHERE queue = ?1) AS packTasks,
              (SELECT count(*) FROM tasks WHERE queue = ?1) AS rows`,
    )
    .bind(queue)
    .first<{ packs: number; packTasks: number; rows: number }>();
  return row ?? { packs: 0, packTasks: 0, rows: 0 };
}
