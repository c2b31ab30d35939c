import { and, eq, inArray, isNull, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { tasks } from "../db/schema";
import { recordCounters } from "./counters";
import { EdgeqError, NotFoundError } from "../contracts/errors";
import type { StoredTask } from "../contracts/stored-task";
import { storedTask } from "./task-row";

/** The SET clause of a cancel: pending or waiting (on dependencies) -> cancelled at once, a waiting task's
 * run_at back to the one it asked for; processing -> cancel requested. */
function cancelSet(now: number) {
  const atOnce = sql`${tasks.state} IN ('pending', 'waiting')`;
  return {
    state: sql`CASE WHEN ${atOnce} THEN 'cancelled' ELSE ${tasks.state} END`,
    finishedAt: sql`CASE WHEN ${atOnce} THEN ${now} ELSE ${tasks.finishedAt} END`,
    runAt: sql`CASE WHEN ${tasks.state} = 'waiting' THEN coalesce(${tasks.readyAt}, ${tasks.runAt}) ELSE ${tasks.runAt} END`,
    priority: sql`CASE WHEN ${tasks.state} = 'waiting' THEN coalesce(${tasks.readyPriority}, ${tasks.priority}) ELSE ${tasks.priority} END`,
    cancelRequested: sql`CASE WHEN ${tasks.state} = 'processing' THEN 1 ELSE ${tasks.cancelRequested} END`,
    updatedAt: now,
  };
}

/**
 * Cancels one task. A pending task is cancelled at once; a processing task is marked cancel-requested and
 * its holder learns it on its next heartbeat or ack (the task then ends cancelled). Finished tasks cannot
 * be cancelled (`invalid_transition`).
 *
 * @example
 * const task = await cancelTask(db, id, Date.now());
 */
export async function cancelTask(db: Db, id: string, now: number): Promise<StoredTask> {
  const [row] = await db
    .update(tasks)
    .set(cancelSet(now))
    .where(and(eq(tasks.id, id), isNull(tasks.finishedAt), eq(tasks.cancelRequested, 0)))
    .returning();
  if (row) {
    if (row.state === "cancelled")
      await recordCounters(db, [{ queue: row.queue, type: row.type, counter: "cancelled" }], now);
    return storedTask(row);
  }
  const existing = await db.select().from(tasks).where(eq(tasks.id, id)).get();
  if (!existing) throw new NotFoundError(`task ${id}`);
  throw new EdgeqError(
    "invalid_transition",
    existing.cancelRequested === 1 && existing.state === "processing"
      ? `task ${id}: a cancel was already requested`
      : `task ${id} is ${existing.state}; only pending, waiting or processing tasks can be cancelled`,
  );
}

/**
 * Cancels every live task of a queue, optionally of one group: pending ones at once, processing ones by
 * cancel request. `freesFlowKey`: a task it cancelled may have held its flow key (keyed, and started: an
 * ordered key's retry waiting its turn) — the key's next task may be handed out now.
 *
 * @example
 * const { cancelled, cancel_requested } = await cancelQueueTasks(db, "renders", { group: "album-7" }, Date.now());
 */
export async function cancelQueueTasks(
  db: Db,
  queue: string,
  scope: { group?: string },
  now: number,
  /** Filled with the ids of the tasks this call cancelled (for their events); not those only asked to stop. */
  cancelledIds: string[] = [],
): Promise<{ cancelled: number; cancel_requested: number; freesFlowKey: boolean }> {
  const rows = await db
    .update(tasks)
    .set(cancelSet(now))
    .where(
      and(
        eq(tasks.queue, queue),
        isNull(tasks.finishedAt),
        eq(tasks.cancelRequested, 0),
        inArray(tasks.state, ["pending", "waiting", "processing"]),
        scope.group === undefined ? undefined : eq(tasks.groupKey, scope.group),
      ),
    )
    .returning({
      id: tasks.id,
      state: tasks.state,
      type: tasks.type,
      flowKey: tasks.flowKey,
      startedAt: tasks.startedAt,
    });
  cancelledIds.push(...rows.filter((r) => r.state === "cancelled").map((r) => r.id));
  await recordCounters(
    db,
    rows.filter((r) => r.state === "cancelled").map((r) => ({ queue, type: r.type, counter: "cancelled" as const })),
    now,
  );
  return {
    cancelled: rows.filter((r) => r.state === "cancelled").length,
    cancel_requested: rows.filter((r) => r.state === "processing").length,
    // A keyed task cancelled after it started (a retry waiting its turn) may have held an ordered key.
    freesFlowKey: rows.some((r) => r.state === "cancelled" && r.flowKey !== null && r.startedAt !== null),
  };
}
