import { sql } from "drizzle-orm";
import { batchAll, type Db } from "../../db/client";
import { TASK_STATES } from "../../contracts/states";
import type { QueueStats, StateCounts } from "../read";
import type { SlotBody, SlotChar } from "./pack-row";

/**
 * The per-queue reads of the port's TaskReads over packs: `queueStats` (one queue, through its indexes:
 * `packs_live` and `packs_done`, migration 0023) and `listQueues` (every queue). Counts come from each pack's
 * `st` column, one character per slot; the bodies are read only where a count needs one (a waiting slot's
 * own run time for `due`, a slot's group for a group's stats).
 */

/** The state each slot character counts as; `o` (no task here: transit-out.ts) counts as none. */
const STATE_OF: Record<Exclude<SlotChar, "o">, keyof StateCounts> = {
  p: "pending",
  w: "pending",
  r: "processing",
  c: "completed",
  d: "dead",
  x: "cancelled",
};

function emptyCounts(): StateCounts {
  return Object.fromEntries(TASK_STATES.map((s) => [s, 0])) as StateCounts;
}

interface CountedRow {
  run_at: number;
  st: string;
  slots: string | null;
}

/**
 * queueStats: counts per state of a queue (optionally one group), its due pending tasks and the oldest due
 * one's run time. Reads the queue's packs only — its live ones through `packs_live`, its finished ones
 * through `packs_done` — one row per pack (a hundred tasks), never another queue's.
 *
 * @example
 * const stats = await packQueueStats(db, "emails", {}, Date.now());
 */
export async function packQueueStats(
  db: Db,
  queue: string,
  scope: { group?: string },
  now: number,
): Promise<QueueStats> {
  const grouped = scope.group !== undefined;
  const bodies = sql.raw(grouped ? "json(slots)" : "CASE WHEN instr(st, 'w') > 0 THEN json(slots) END");
  const [live = [], finished = []] = await batchAll<CountedRow>(db, [
    sql`SELECT run_at, st, ${bodies} AS slots FROM packs INDEXED BY packs_live
      WHERE queue = ${queue} AND finished_at IS NULL`,
    sql`SELECT run_at, st, ${sql.raw(grouped ? "json(slots)" : "NULL")} AS slots FROM packs INDEXED BY packs_done
      WHERE queue = ${queue} AND finished_at IS NOT NULL`,
  ]);
  const counts = emptyCounts();
  let due = 0;
  let oldest: number | null = null;
  for (const row of [...live, ...finished]) {
    const slots = row.slots === null ? null : (JSON.parse(row.slots) as SlotBody[]);
    for (let k = 0; k < row.st.length; k++) {
      if (grouped && slots![k]!.g !== scope.group) continue;
      const c = row.st[k] as SlotChar;
      if (c === "o") continue;
      counts[STATE_OF[c]]++;
      if (c !== "p" && c !== "w") continue;
      const runAt = c === "w" ? slots![k]!.t! : row.run_at;
      if (runAt > now) continue;
      due++;
      oldest = oldest === null ? runAt : Math.min(oldest, runAt);
    }
  }
  return { queue, counts, due, oldest_due_at: oldest };
}

/**
 * listQueues: every queue with packs or a stored config, by name, with its counts per state. Reads every
 * pack's `queue` and `st` (one row per pack, no body), as the D1 store reads every task's `queue` and `state`.
 *
 * @example
 * const all = await listPackQueues(db);
 */
export async function listPackQueues(db: Db): Promise<Array<{ queue: string; counts: StateCounts }>> {
  const [rows = [], configured = []] = await batchAll(db, [
    sql`SELECT queue, st FROM packs`,
    sql`SELECT name FROM queues`,
  ]);
  const byQueue = new Map<string, StateCounts>();
  for (const { name } of configured as Array<{ name: string }>) byQueue.set(name, emptyCounts());
  for (const { queue, st } of rows as Array<{ queue: string; st: string }>) {
    const counts = byQueue.get(queue) ?? emptyCounts();
    for (const c of st) if (c !== "o") counts[STATE_OF[c as Exclude<SlotChar, "o">]]++;
    byQueue.set(queue, counts);
  }
  return [...byQueue.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([queue, counts]) => ({ queue, counts }));
}
