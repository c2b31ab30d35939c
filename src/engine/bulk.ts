import { sql, type SQL } from "drizzle-orm";
import type { Db } from "../db/client";
import { BULK_ACTION_STATES, type BulkAction } from "../contracts/bulk";
import type { TaskState } from "../contracts/states";
import { recordCounters } from "./counters";
import { reviveSetSql } from "./redrive";

/**
 * Which of a queue's tasks a bulk action touches (src/contracts/bulk.ts's BulkFilter, times in ms): every
 * field given must match. A new field is one entry here and one in FILTER_SQL below, which the compiler
 * requires for every field.
 */
export interface TaskFilter {
  state?: TaskState;
  type?: string;
  group?: string;
  /** The flow-control key (issue 30's `flow_key`). */
  key?: string;
  /** Created at or after (ms). */
  createdFrom?: number;
  /** Created strictly before (ms). */
  createdBefore?: number;
}

/** Each filter field's condition on the tasks table. */
const FILTER_SQL: { [K in keyof TaskFilter]-?: (value: NonNullable<TaskFilter[K]>) => SQL } = {
  state: (state) => sql`state = ${state}`,
  type: (type) => sql`type = ${type}`,
  group: (group) => sql`group_key = ${group}`,
  key: (key) => sql`flow_key = ${key}`,
  createdFrom: (at) => sql`created_at >= ${at}`,
  createdBefore: (at) => sql`created_at < ${at}`,
};

/**
 * The tasks of `queue` that `action` would change under `filter`: in one of the action's states, matching
 * every field; for a cancel, not already asked to stop (and live: `finished_at IS NULL` lets it walk the
 * live index); for a revival, not holding a dedupe key a live task of the queue holds (skipped, as a redrive
 * skips it, so it never uses up the cap call after call).
 */
function eligibleSql(queue: string, action: BulkAction, filter: TaskFilter): SQL {
  const states = sql.join(
    BULK_ACTION_STATES[action].map((s) => sql`${s}`),
    sql`, `,
  );
  const conditions = [sql`queue = ${queue}`, sql`state IN (${states})`];
  for (const key of Object.keys(FILTER_SQL) as Array<keyof TaskFilter>) {
    const value = filter[key];
    if (value !== undefined) conditions.push((FILTER_SQL[key] as (v: unknown) => SQL)(value));
  }
  if (action === "cancel") conditions.push(sql`finished_at IS NULL AND cancel_requested = 0`);
  else {
    conditions.push(sql`NOT EXISTS (SELECT 1 FROM tasks live
      WHERE live.queue = tasks.queue AND live.dedupe_key = tasks.dedupe_key AND live.finished_at IS NULL)`);
  }
  return sql.join(conditions, sql` AND `);
}

/**
 * How many tasks `action` would change under `filter`, counting at most `cap + 1` (so a caller learns
 * whether more than `cap` match without a count of the whole queue). One read.
 *
 * @example
 * const n = await countForBulk(db, "emails", "cancel", { group: "user-7" }, 1000);
 */
export async function countForBulk(
  db: Db,
  queue: string,
  action: BulkAction,
  filter: TaskFilter,
  cap: number,
): Promise<number> {
  const row = await db.get<{ n: number }>(
    sql`SELECT count(*) AS n FROM (SELECT 1 FROM tasks WHERE ${eligibleSql(queue, action, filter)} LIMIT ${cap + 1})`,
  );
  return row?.n ?? 0;
}

/** What one bulk action changed on one database. */
export interface BulkChanged {
  /** Tasks changed: cancelled, asked to stop, or revived. */
  count: number;
  /** The tasks that ended cancelled (a cancel) or were revived (a retry or redrive), for their events. */
  ids: string[];
  /** Whether tasks the action would change remain (more than the cap matched). */
  more: boolean;
  /** A cancel: a task it cancelled may have held its flow key (keyed and started: an ordered key's retry
   * waiting its turn), so the key's next task may be handed out now. */
  freesFlowKey: boolean;
}

/**
 * Applies `action` to at most `cap` of the queue's tasks matching `filter`, in id (creation) order, in ONE
 * statement — a cancel: pending → cancelled, processing → cancel requested (its holder learns it on its next
 * write); a retry or redrive: → pending now, attempts reset (`UPDATE OR IGNORE` skips a task whose dedupe key
 * another task revived by the same statement took). A cancel then adds its cancellations to the counters (as a
 * queue cancel does). Then one read says whether more remain.
 *
 * @example
 * const { count, ids, more } = await applyBulk(db, "emails", "retry", { type: "send" }, 1000, Date.now());
 */
export async function applyBulk(
  db: Db,
  queue: string,
  action: BulkAction,
  filter: TaskFilter,
  cap: number,
  now: number,
): Promise<BulkChanged> {
  const eligible = eligibleSql(queue, action, filter);
  const picked = sql`id IN (SELECT id FROM tasks WHERE ${eligible} ORDER BY id LIMIT ${cap})`;
  let count: number;
  let ids: string[];
  let freesFlowKey = false;
  if (action === "cancel") {
    const rows = await db.all<{ id: string; state: string; type: string; frees: number }>(sql`UPDATE tasks SET
        state = CASE WHEN state = 'pending' THEN 'cancelled' ELSE state END,
        finished_at = CASE WHEN state = 'pending' THEN ${now} ELSE finished_at END,
        cancel_requested = CASE WHEN state = 'processing' THEN 1 ELSE cancel_requested END,
        updated_at = ${now}
      WHERE ${picked}
      RETURNING id, state, type, flow_key IS NOT NULL AND started_at IS NOT NULL AS frees`);
    const cancelled = rows.filter((r) => r.state === "cancelled");
    freesFlowKey = cancelled.some((r) => r.frees === 1);
    await recordCounters(
      db,
      cancelled.map((r) => ({ queue, type: r.type, counter: "cancelled" as const })),
      now,
    );
    count = rows.length;
    ids = cancelled.map((r) => r.id);
  } else {
    const rows = await db.all<{ id: string }>(sql`UPDATE OR IGNORE tasks SET ${reviveSetSql(now)}
      WHERE ${picked} RETURNING id`);
    count = rows.length;
    ids = rows.map((r) => r.id);
  }
  const left = await db.get<{ one: number }>(sql`SELECT 1 AS one FROM tasks WHERE ${eligible} LIMIT 1`);
  return { count, ids, more: left !== undefined, freesFlowKey };
}
