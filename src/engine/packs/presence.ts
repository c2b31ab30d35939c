import { sql, type SQL } from "drizzle-orm";
import { batchAll, type Db } from "../../db/client";
import { transitHeldSql } from "../presence";
import type { PartitionSelection } from "../transit";
import { locateTasks } from "./locate";
import { B32 } from "./pack-ids";
import { packsOfQueueSql } from "./queue-packs";

/**
 * The port's Presence over packs (src/engine/store-shards.ts; the row store's is src/engine/presence.ts): what
 * a database holds of a queue, asked by the layers that choose databases and by the SQS view of which queues
 * exist. Every pack row holds at least one task (a take-out deletes a pack it empties: transit-out.ts), so a
 * pack of the queue is a task of it. Live packs are found through `packs_live`, finished ones through
 * `packs_done` (queue-packs.ts). Tasks in transit out are read from `task_transit`, which both layouts share.
 */

/** A live slot of pack `p` no cancel is pending for: a pending one (a cancel ends those at once), or a
 * processing one whose body has no cancel request (`cr`). */
function uncancelledLiveSql(p: SQL): SQL {
  return sql`(${p}.st GLOB '*[pw]*' OR EXISTS (SELECT 1 FROM json_each(${p}.slots) AS j
    WHERE substr(${p}.st, j.key + 1, 1) = 'r' AND j.value->>'cr' IS NULL))`;
}

/**
 * Whether the database holds anything of the queue: a stored config or any task (live or finished).
 *
 * @example
 * if (await hasPackQueueData(db, "emails")) placeOn(db);
 */
export async function hasPackQueueData(db: Db, queue: string): Promise<boolean> {
  // Cheapest first: the config's key, then the live and the finished packs' indexes (each a probe).
  const row = await db.get<{ found: number }>(sql`SELECT
      EXISTS(SELECT 1 FROM queues WHERE name = ${queue})
      OR EXISTS(SELECT 1 FROM packs WHERE queue = ${queue} AND finished_at IS NULL)
      OR EXISTS(SELECT 1 FROM packs WHERE queue = ${queue} AND finished_at IS NOT NULL) AS found`);
  return row?.found === 1;
}

/**
 * Which of `queues` have a live task: one probe of `packs_live` per queue.
 *
 * @example
 * const strays = await findPackQueuesWithLiveTasks(db, ["emails", "renders"]);
 */
export async function findPackQueuesWithLiveTasks(db: Db, queues: string[]): Promise<string[]> {
  const rows = await db.all<{ queue: string }>(
    sql`SELECT j.value AS queue FROM json_each(${JSON.stringify(queues)}) AS j
      WHERE EXISTS (SELECT 1 FROM packs p WHERE p.queue = j.value AND p.finished_at IS NULL)`,
  );
  return rows.map((r) => r.queue);
}

/**
 * Which of `ids` are here: in a pack (live or finished), or in transit out.
 *
 * @example
 * const here = await findPackTaskIdsHeld(db, ["01J…", "01K…"]);
 */
export async function findPackTaskIdsHeld(db: Db, ids: string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const inPacks = await locateTasks(db, ids);
  const moving = await db.all<{ id: string }>(
    sql`SELECT id FROM task_transit WHERE id IN (SELECT value FROM json_each(${JSON.stringify(ids)}))`,
  );
  return [...new Set([...inPacks.keys(), ...moving.map((r) => r.id)])];
}

/**
 * How many of the queue's tasks are here, in any state, or in transit out; with `partition`, only that
 * partition's (a slot a move gave the task, else its id carrying the slot: transit-row.ts `inPartition`) and
 * those in transit to it. Counts the state characters (`st`) without decoding a pack, but with `partition`,
 * which reads each slot's id out of its body.
 *
 * @example
 * const left = await countPackQueueTasksHeld(db, "emails", { slot: 3, idGlob: "??????????0003*" });
 */
export async function countPackQueueTasksHeld(db: Db, queue: string, partition?: PartitionSelection): Promise<number> {
  const row = await db.get<{ n: number }>(
    sql`SELECT (${packsHeldSql(queue, partition)}) + (${transitHeldSql(queue, partition)}) AS n`,
  );
  return row?.n ?? 0;
}

/** The count of the queue's tasks in packs (of one partition), as a scalar subquery. */
export function packsHeldSql(queue: string, partition?: PartitionSelection): SQL {
  return partition === undefined
    ? sql`SELECT coalesce(sum(length(replace(st, 'o', ''))), 0) FROM packs WHERE ${packsOfQueueSql(queue)}`
    : sql`SELECT count(*) FROM packs p, json_each(p.slots) AS j
        WHERE ${packsOfQueueSql(queue, sql`p`)} AND substr(p.st, j.key + 1, 1) <> 'o'
          AND (j.value->>'sl' = ${partition.slot} OR (j.value->>'sl' IS NULL AND coalesce(j.value->>'i',
            p.id || substr(${B32}, j.key / 32 + 1, 1) || substr(${B32}, j.key % 32 + 1, 1)) GLOB ${partition.idGlob}))`;
}

/**
 * Whether the queue has a live task no cancel is pending for: a probe of `packs_live`, reading the bodies of
 * a live pack only when it has processing slots and no pending one.
 *
 * @example
 * const inUse = await hasPackUncancelledLiveTask(db, "emails");
 */
export async function hasPackUncancelledLiveTask(db: Db, queue: string): Promise<boolean> {
  const live = await db.get<{ id: string }>(
    sql`SELECT id FROM packs p WHERE p.queue = ${queue} AND p.finished_at IS NULL AND ${uncancelledLiveSql(sql`p`)}
      LIMIT 1`,
  );
  return live !== undefined;
}

/**
 * Names of the queues in use, unsorted and distinct: those with a stored config and those with a live task no
 * cancel is pending for. One batch (one moment); reads the config table and `packs_live`, never a finished
 * pack.
 *
 * @example
 * const names = await listPackQueueNamesInUse(db);
 */
export async function listPackQueueNamesInUse(db: Db): Promise<string[]> {
  const [configured = [], live = []] = await batchAll<{ name: string }>(db, [
    sql`SELECT name FROM queues`,
    sql`SELECT DISTINCT p.queue AS name FROM packs p WHERE p.finished_at IS NULL AND ${uncancelledLiveSql(sql`p`)}`,
  ]);
  return [...new Set([...configured, ...live].map((r) => r.name))];
}
