import { getTableColumns, sql, type SQL } from "drizzle-orm";
import { batchAll, type Db } from "../db/client";
import { tasks } from "../db/schema";
import { carryEdgesSql, landEdgesSql } from "./edge-transit";
import { countedInRowSql, eventsUpsertSql, rowEventsSql } from "./counters-in-row";

/**
 * Tasks in transit between databases (`task_transit`): the relay's two halves. On the database a task
 * leaves, `takeOutForTransit` turns it from live into in-transit; on the database it joins,
 * `putInFromTransit` inserts it; then `clearTransit` on the first forgets it. Which database, which
 * destination and when is the relay's business (src/shards/relay.ts); the statements are here.
 */

// `uncounted` stays behind: a task's events kept in its row are added to this database's counters as it
// leaves (src/engine/counters-in-row.ts), and the destination counts its next transitions on their path.
const COLUMNS = Object.values(getTableColumns(tasks))
  .map((c) => c.name)
  .filter((c) => c !== "uncounted");
const ROW_JSON = sql.raw(`json_object(${COLUMNS.map((c) => `'${c}', tasks.${c}`).join(", ")})`);
const COLUMN_LIST = sql.raw(COLUMNS.join(", "));

/** The columns of a transit row's task, for the insert on the destination. A dedupe key a live task there
 * already holds is dropped (see putInFromTransit). `keepKey` false drops every key. The slot column is the
 * delivery's (`DeliveredRow.rowSlot`): the partition the task joins, unless its id carries it. */
function fromTransit(keepKey: boolean): SQL {
  return sql.join(
    COLUMNS.map((c) =>
      c === "slot"
        ? sql.raw(`json_extract(t.value, '$.rowSlot')`)
        : c !== "dedupe_key"
          ? sql.raw(`json_extract(t.value, '$.row.${c}')`)
          : keepKey
            ? sql`CASE WHEN EXISTS (SELECT 1 FROM tasks live WHERE live.queue = json_extract(t.value, '$.row.queue')
              AND live.dedupe_key = json_extract(t.value, '$.row.dedupe_key') AND live.finished_at IS NULL)
            THEN NULL ELSE json_extract(t.value, '$.row.dedupe_key') END`
            : sql`NULL`,
    ),
    sql`, `,
  );
}

/**
 * One partition's tasks on a database that holds other partitions of the queue too: those whose `slot`
 * column names the partition, and those without one whose id carries its slot (src/shards/task-slot.ts).
 */
export interface PartitionSelection {
  slot: number;
  /** The GLOB pattern matching exactly the ids that carry `slot`. */
  idGlob: string;
}

/** The SQL condition for a partition's tasks in `table` (`tasks`, or a task row under another name). */
export function partitionCondition(table: string, part: PartitionSelection): SQL {
  const t = sql.raw(table);
  return sql`(${t}.slot = ${part.slot} OR (${t}.slot IS NULL AND ${t}.id GLOB ${part.idGlob}))`;
}

/** Which of a database's tasks to take out. */
export interface TransitSelection {
  queue: string;
  /** Only this partition's tasks (the others of the queue on this database stay). */
  partition?: PartitionSelection;
  /** Only live (pending, processing) tasks: finished ones stay. */
  liveOnly?: boolean;
}

/** Where the taken tasks go: a database (binding name) and the slot of the partition they join. */
export interface TransitDestination {
  shard: string;
  slot: number;
}

/**
 * Takes up to `limit` of the selected tasks out of `db` into its transit table, each recorded whole (as a
 * JSON object) with its destination; returns how many. One batch: the insert into transit and the delete
 * from `tasks` commit together, so a task is in transit or live here, never both, never neither — and
 * therefore never live on two databases.
 *
 * @example
 * const taken = await takeOutForTransit(db, { queue: "emails" }, { shard: "DB_1", slot: 3 }, 200, Date.now());
 */
export async function takeOutForTransit(
  db: Db,
  selection: TransitSelection,
  to: TransitDestination,
  limit: number,
  now: number,
): Promise<number> {
  const where = sql.join(
    [
      sql`tasks.queue = ${selection.queue}`,
      selection.partition === undefined ? undefined : partitionCondition("tasks", selection.partition),
      selection.liveOnly ? sql`tasks.finished_at IS NULL` : undefined,
    ].filter((c) => c !== undefined),
    sql` AND `,
  );
  const [moved = []] = await batchAll(db, [
    sql`INSERT INTO task_transit (id, queue, dest, slot, row, created_at)
      SELECT tasks.id, tasks.queue, ${to.shard}, ${to.slot}, ${ROW_JSON}, ${now} FROM tasks WHERE ${where}
      LIMIT ${limit}
      ON CONFLICT (id) DO NOTHING
      RETURNING id`,
    // Its dependencies' edges travel with it (src/engine/edge-transit.ts), read before the delete.
    ...carryEdgesSql(now),
    eventsUpsertSql(rowEventsSql(sql`t.id IN (SELECT id FROM task_transit) AND ${countedInRowSql(sql`t`)}`)),
    sql`DELETE FROM tasks WHERE id IN (SELECT id FROM task_transit)`,
  ]);
  return moved.length;
}

/** A task in transit, as its source database holds it. */
export interface TransitRow {
  id: string;
  queue: string;
  /** Destination database (binding name). */
  dest: string;
  /** Destination slot. */
  slot: number;
  /** The whole `tasks` row as JSON text. */
  row: string;
  /** Its dependencies' edges carried with it (src/engine/edge-transit.ts) as JSON text, or null. */
  edges?: string | null;
}

/** A task in transit as it is delivered: with the `slot` column it gets on its destination — the slot of
 * the partition it joins when its id does not carry that slot, else null. */
export interface DeliveredRow extends TransitRow {
  rowSlot: number | null;
}

/**
 * Up to `limit` of the tasks in transit out of `db`, oldest id first.
 *
 * @example
 * const rows = await listTransit(db, 200);
 */
export async function listTransit(db: Db, limit: number): Promise<TransitRow[]> {
  return db.all<TransitRow>(sql`SELECT id, queue, dest, slot, row, edges FROM task_transit ORDER BY id LIMIT ${limit}`);
}

/**
 * Inserts tasks read from another database's transit table into `db`'s `tasks`, by id: a task already
 * here (a repeat after a crash) is left as it is. A task whose dedupe key a live task here already holds —
 * or another task of these rows took first (children of two parents) — goes in without its key: both were
 * accepted, and dropping one would lose it.
 *
 * One batch, and so one round trip: the first insert puts in what it can with the keys, the second puts
 * in, keyless, only what the first refused for a key (everything else is here by then, and its id
 * conflicts); together the rows land all or none, so a failure leaves nothing half-delivered behind.
 *
 * @example
 * await putInFromTransit(destinationDb, (await listTransit(sourceDb, 200)).map((r) => ({ ...r, rowSlot: null })));
 */
export async function putInFromTransit(db: Db, rows: DeliveredRow[]): Promise<void> {
  if (rows.length === 0) return;
  const json = JSON.stringify(
    rows.map((r) => ({
      id: r.id,
      row: JSON.parse(r.row) as unknown,
      rowSlot: r.rowSlot,
      ...(r.edges ? { edges: JSON.parse(r.edges) as unknown } : {}),
    })),
  );
  // A task's carried edges go in with it (src/engine/edge-transit.ts): nothing for a task without any.
  const edges = rows.some((r) => r.edges) ? landEdgesSql(json) : [];
  await batchAll(db, [
    sql`INSERT INTO tasks (${COLUMN_LIST})
      SELECT ${fromTransit(true)} FROM json_each(${json}) AS t WHERE true
      ON CONFLICT DO NOTHING`,
    sql`INSERT INTO tasks (${COLUMN_LIST})
      SELECT ${fromTransit(false)} FROM json_each(${json}) AS t WHERE true
      ON CONFLICT (id) DO NOTHING`,
    ...edges,
  ]);
}

/**
 * Forgets tasks in transit out of `db` once their destination holds them; returns the ids this call removed
 * (a relay running twice at once delivers the same rows twice, harmlessly, but only one clears each: that
 * one counts it).
 *
 * @example
 * const cleared = await clearTransit(sourceDb, delivered.map((r) => r.id));
 */
export async function clearTransit(db: Db, ids: string[]): Promise<string[]> {
  const rows = await db.all<{ id: string }>(
    sql`DELETE FROM task_transit WHERE id IN (SELECT value FROM json_each(${JSON.stringify(ids)})) RETURNING id`,
  );
  return rows.map((r) => r.id);
}

/**
 * Whether a task is in transit out of `db` right now (between a take-out and its clear).
 *
 * @example
 * if (await isInTransit(db, id)) throw new EdgeqError("task_moving", "retry in a second");
 */
export async function isInTransit(db: Db, id: string): Promise<boolean> {
  return (await db.get<{ one: number }>(sql`SELECT 1 AS one FROM task_transit WHERE id = ${id}`)) !== undefined;
}

/**
 * Which of `ids` are in transit out of `db` right now: one read for a batch.
 *
 * @example
 * const moving = await findInTransit(sourceDb, ["01J…", "01K…"]);
 */
export async function findInTransit(db: Db, ids: string[]): Promise<string[]> {
  const rows = await db.all<{ id: string }>(
    sql`SELECT id FROM task_transit WHERE id IN (SELECT value FROM json_each(${JSON.stringify(ids)}))`,
  );
  return rows.map((r) => r.id);
}
