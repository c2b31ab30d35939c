import { sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { NotFoundError } from "../../contracts/errors";
import type { TaskState } from "../../contracts/states";
import type { StoredTask } from "../../contracts/stored-task";
import { TASK_STATES } from "../../contracts/states";
import type { ListFilter, QueueStats, StateCounts, TaskPage } from "../read";
import { locateTasks } from "./locate";
import { decodePack, PACK_COLUMNS, type PackRowRead } from "./pack-row";
import { slotState } from "./slot-rules";
import { loadSpill } from "./spill";
import { storedSlot } from "./stored-slot";

/** getTask: the task by id, every field (its spilled values read back); `not_found` when absent. */
export async function getPackTask(db: Db, id: string): Promise<StoredTask> {
  const at = (await locateTasks(db, [id])).get(id);
  if (!at) throw new NotFoundError(`task ${id}`);
  return storedSlot(at.pack, at.k);
}

/** findTaskState: the task's state, or null when the store has no such task. */
export async function findPackTaskState(db: Db, id: string): Promise<TaskState | null> {
  const at = (await locateTasks(db, [id])).get(id);
  return at ? slotState(at.slot) : null;
}

/**
 * listTasks: a page of a queue's tasks in id order. NOT INDEXED: it reads every pack of the queue (`packs`
 * has no index on queue beyond the live one; adding one is a row per pack at enqueue) — fine for the
 * conformance suite's small queues, not for a served store (docs/design/packs.md, "Left").
 */
export async function listPackTasks(db: Db, queue: string, filter: ListFilter): Promise<TaskPage> {
  const all = (await queueTasks(db, queue))
    .filter(
      (t) =>
        (filter.state === undefined || t.state === filter.state) &&
        (filter.group === undefined || t.groupKey === filter.group) &&
        (filter.type === undefined || t.type === filter.type) &&
        (filter.dedupe_key === undefined || t.dedupeKey === filter.dedupe_key) &&
        (filter.cursor === undefined || t.id > filter.cursor),
    )
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const page = all.slice(0, filter.limit);
  return { tasks: page, next_cursor: all.length > filter.limit ? page.at(-1)!.id : null };
}

/** queueStats: counts per state, and the pending tasks due now. NOT INDEXED, as listPackTasks. */
export async function packQueueStats(
  db: Db,
  queue: string,
  scope: { group?: string },
  now: number,
): Promise<QueueStats> {
  const counts = Object.fromEntries(TASK_STATES.map((s) => [s, 0])) as StateCounts;
  let due = 0;
  let oldest: number | null = null;
  for (const t of await queueTasks(db, queue)) {
    if (scope.group !== undefined && t.groupKey !== scope.group) continue;
    counts[t.state]++;
    if (t.state === "pending" && t.runAt <= now) {
      due++;
      oldest = oldest === null ? t.runAt : Math.min(oldest, t.runAt);
    }
  }
  return { queue, counts, due, oldest_due_at: oldest };
}

/** Every task of a queue, from every pack of it (a scan: see listPackTasks). */
async function queueTasks(db: Db, queue: string): Promise<StoredTask[]> {
  const rows = await db.all<PackRowRead>(sql`SELECT ${sql.raw(PACK_COLUMNS)} FROM packs WHERE queue = ${queue}`);
  const packs = rows.map(decodePack);
  await loadSpill(db, packs);
  return packs.flatMap((pack) => pack.slots.map((_, k) => storedSlot(pack, k)));
}
