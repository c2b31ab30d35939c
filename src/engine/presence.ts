import { sql, type SQL } from "drizzle-orm";
import { batchAll, type Db } from "../db/client";
import { partitionCondition, type PartitionSelection } from "./transit";

/**
 * What one database holds, asked by the layers that choose databases (src/shards) and by the SQS view of
 * which queues exist: does a queue or a task live here. Each is one read; none scans finished tasks
 * unless it says so.
 */

/**
 * Whether `db` holds anything of the queue: a stored config or any task (live or finished). A queue that
 * existed before sharding stays where its data is.
 *
 * @example
 * if (await hasQueueData(homeDb, "emails")) placeOn(homeDb);
 */
export async function hasQueueData(db: Db, queue: string): Promise<boolean> {
  const row = await db.get<{ found: number }>(sql`SELECT
      EXISTS(SELECT 1 FROM queues WHERE name = ${queue})
      OR EXISTS(SELECT 1 FROM tasks WHERE queue = ${queue}) AS found`);
  return row?.found === 1;
}

/**
 * Which of `queues` have live tasks on `db`: one probe of the live index per queue, never a scan of every
 * live task.
 *
 * @example
 * const strays = await findQueuesWithLiveTasks(db, ["emails", "renders"]);
 */
export async function findQueuesWithLiveTasks(db: Db, queues: string[]): Promise<string[]> {
  const rows = await db.all<{ queue: string }>(
    sql`SELECT j.value AS queue FROM json_each(${JSON.stringify(
      queues,
    )}) AS j WHERE EXISTS (SELECT 1 FROM tasks t WHERE t.queue = j.value AND t.finished_at IS NULL)`,
  );
  return rows.map((r) => r.queue);
}

/**
 * Which of `ids` are on `db`, live, finished or in transit out of it.
 *
 * @example
 * const here = await findTaskIdsHeld(db, ["01J…", "01K…"]);
 */
export async function findTaskIdsHeld(db: Db, ids: string[]): Promise<string[]> {
  const json = JSON.stringify(ids);
  const rows = await db.all<{ id: string }>(sql`SELECT id FROM tasks WHERE id IN (SELECT value FROM json_each(${json}))
    UNION SELECT id FROM task_transit WHERE id IN (SELECT value FROM json_each(${json}))`);
  return rows.map((r) => r.id);
}

/**
 * How many of the queue's tasks `db` holds, in `tasks` (any state) or in transit out of it: what a move
 * has left on its source. With `partition`, only that partition's tasks (and those in transit to it) —
 * one partition's share when others of the queue are on the same database.
 *
 * @example
 * const left = await countQueueTasksHeld(sourceDb, "emails", { slot: 3, idGlob: "??????????0003*" });
 */
export async function countQueueTasksHeld(db: Db, queue: string, partition?: PartitionSelection): Promise<number> {
  const row = await db.get<{ n: number }>(
    sql`SELECT (${tasksHeldSql(queue, partition)}) + (${transitHeldSql(queue, partition)}) AS n`,
  );
  return row?.n ?? 0;
}

/** The count of the queue's tasks in `tasks` (of one partition), as a scalar subquery. */
export function tasksHeldSql(queue: string, partition?: PartitionSelection): SQL {
  const ofPart = partition === undefined ? sql`` : sql` AND ${partitionCondition("tasks", partition)}`;
  return sql`SELECT count(*) FROM tasks WHERE queue = ${queue}${ofPart}`;
}

/** The count of the queue's tasks in transit out (to one partition), as a scalar subquery: `task_transit` is
 * one table for every layout of the database. */
export function transitHeldSql(queue: string, partition?: PartitionSelection): SQL {
  const inTransitTo = partition === undefined ? sql`` : sql` AND slot = ${partition.slot}`;
  return sql`SELECT count(*) FROM task_transit WHERE queue = ${queue}${inTransitTo}`;
}

/**
 * Whether the queue has a live task on `db` that no cancel is pending for (one probe of the live index).
 *
 * @example
 * const inUse = await hasUncancelledLiveTask(db, "emails");
 */
export async function hasUncancelledLiveTask(db: Db, queue: string): Promise<boolean> {
  const live = await db.get<{ id: string }>(
    sql`SELECT id FROM tasks WHERE queue = ${queue} AND finished_at IS NULL AND cancel_requested = 0 LIMIT 1`,
  );
  return live !== undefined;
}

/**
 * Names of the queues in use on `db`, unsorted: those with a stored config and those with live tasks no
 * cancel is pending for. Reads the config table and the live index only, never finished tasks. One batch:
 * one round trip, and both reads see the same moment (no write runs between them).
 *
 * @example
 * const names = await listQueueNamesInUse(db);
 */
export async function listQueueNamesInUse(db: Db): Promise<string[]> {
  const [configured = [], live = []] = await batchAll<{ name: string }>(db, [
    sql`SELECT name FROM queues`,
    sql`SELECT DISTINCT queue AS name FROM tasks WHERE finished_at IS NULL AND cancel_requested = 0`,
  ]);
  return [...new Set([...configured, ...live].map((r) => r.name))];
}
