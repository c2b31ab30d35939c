import { sql, type SQL } from "drizzle-orm";
import type { AckScope } from "./ack";
import { flowSlotReturningSql } from "./flow-control";

/**
 * Completions that keep nothing (queue config `retention_s: 0`): the fenced DELETE of the tasks an ack
 * completes whose queue keeps no completed task, run in the ack's batch just before its fenced UPDATE (the
 * UPDATE then no longer finds them, so each item is ended by exactly one of the two). A delete writes one
 * row, as the update would (index deletions are not billed), and the retention prune's later delete — one
 * more row per task — never comes.
 *
 * Only a task nothing still needs after its completion goes: a task
 * - whose cancel was not requested (it ends `cancelled`, kept as every cancelled task is),
 * - without `then` children (their insert reads the parent's row and result, after the update),
 * - without an unsettled dependent, here (`task_edges`) or on another database (`remote_edges`): the triggers
 *   that settle them fire on the UPDATE that sets `finished_at`, never on a delete.
 * Those take the UPDATE and are pruned at the next tick (retention 0 for a completed task). A result is
 * dropped with its task: that is what the queue's `retention_s: 0` asks for.
 *
 * Returns what the UPDATE returns (id, queue, state, run_at, flow_slot), so the ack answers and the effects
 * owner publishes the completion the same way whichever statement ended the task.
 */
export function deleteCompletedSql(fencesJson: string, now: number, scope: AckScope): SQL {
  return sql`DELETE FROM tasks WHERE ${keepsNothingSql(fencesJson, now, scope)}
    RETURNING tasks.id, tasks.queue, 'completed' AS state, tasks.run_at, ${flowSlotReturningSql()}`;
}

/**
 * Whether the completion of task `tasks` (the table, by that name) by one of the items deletes it
 * (deleteCompletedSql): the item's own token (a row value against the items, built once) on a lease still
 * held, each task found by its primary key; the queue's retention looked up once for a scoped ack, per task
 * otherwise. The counting statement before the delete reads the same predicate, to add what the task's row
 * kept (src/engine/counters-in-row.ts) before it goes.
 */
export function keepsNothingSql(fencesJson: string, now: number, scope: AckScope): SQL {
  const items = sql`SELECT j.value->>'id', j.value->>'lease_token' FROM json_each(${fencesJson}) AS j`;
  const keepsNothing =
    scope.queue === undefined
      ? sql`(SELECT q.retention_s FROM queues q WHERE q.name = tasks.queue) = 0`
      : sql`(SELECT q.retention_s FROM queues q WHERE q.name = ${scope.queue}) = 0 AND tasks.queue = ${scope.queue}`;
  return sql`${keepsNothing}
      AND tasks.id IN (SELECT j.value->>'id' FROM json_each(${fencesJson}) AS j)
      AND (tasks.id, tasks.lease_token) IN (${items})
      AND tasks.state = 'processing' AND tasks.lease_expires_at > ${now}
      AND tasks.cancel_requested = 0 AND tasks.then_tasks IS NULL
      AND NOT EXISTS (SELECT 1 FROM task_edges e WHERE e.dependency = tasks.id AND e.outcome IS NULL)
      AND NOT EXISTS (SELECT 1 FROM remote_edges r WHERE r.dependency = tasks.id AND r.outcome IS NULL)`;
}
