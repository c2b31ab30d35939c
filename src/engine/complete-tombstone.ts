import { sql, type SQL } from "drizzle-orm";
import type { AckScope } from "./ack";
import { flowSlotReturningSql } from "./flow-control";
import { TOMBSTONE_MARK } from "./tombstone-mark";

/**
 * Completions that keep nothing (queue config `retention_s: 0`): the fenced UPDATE that turns each task an
 * ack completes, whose queue keeps no completed task, into a tombstone (src/engine/tombstone-mark.ts), run
 * in the ack's batch just before its own fenced UPDATE (which then no longer finds them under their ids, so
 * each item is ended by exactly one of the two).
 *
 * Why a tombstone, not a delete (issue 32): D1 bills every row a statement writes. A delete writes the row;
 * but the counter events the row still keeps (src/engine/counters-in-row.ts) must then be counted in the same
 * batch — a second row, the counters upsert — and the next enqueue inserts a new row with its live-index
 * entry. The tombstone writes one row (leaving the live indexes is not billed): its completion event joins
 * the others in the row for the fold, under the task's queue (eventQueueSql), and once folded an enqueue of one
 * task reuses the row (src/engine/reuse-rows.ts) as an insert would, or the retention prune deletes it after
 * TOMBSTONE_KEEP_MS. For a client the task is gone at once, as deleted: its id answers `404`, and it is in no
 * list, count or stats of its queue (none of them can name the tombstone's id or queue); its id is free for a
 * new task. Its payload, result, errors, checkpoint, keys and lease are cleared by the same write: nothing the
 * task carried is kept.
 *
 * Only a task nothing still needs after its completion goes: a task
 * - whose cancel was not requested (it ends `cancelled`, kept as every cancelled task is),
 * - without `then` children (their insert reads the parent's row and result, after the update),
 * - without an unsettled dependent, here (`task_edges`) or on another database (`remote_edges`): the triggers
 *   that settle them read the task under its own id.
 * Those take the ack's UPDATE and are pruned at the next tick (retention 0 for a completed task). A result is
 * dropped with its task: that is what the queue's `retention_s: 0` asks for.
 *
 * `uncounted` is the row's counter events after the completion (the completion's UPDATE computes it the same
 * way). Returns what the ack's UPDATE returns (id, queue, state, run_at, flow_slot) under the task's own id
 * and queue, so the ack answers and the effects owner publishes the completion whichever statement ended it.
 */
export function tombstoneCompletedSql(fencesJson: string, now: number, scope: AckScope, uncounted: SQL): SQL {
  const queue = sql`substr(tasks.queue, 2)`;
  return sql`UPDATE tasks SET id = ${TOMBSTONE_MARK} || tasks.id, queue = ${TOMBSTONE_MARK} || tasks.queue,
      state = 'completed', payload = 'null', result = NULL, errors = '[]', progress = 100, progress_message = NULL,
      checkpoint = NULL, dedupe_key = NULL, group_key = NULL, lease_token = NULL, lease_holder = NULL,
      lease_expires_at = NULL, claim_by = NULL, acked_with = NULL, finished_at = ${now}, updated_at = ${now},
      uncounted = ${uncounted}
    WHERE ${keepsNothingSql(fencesJson, now, scope)}
    RETURNING substr(tasks.id, 2) AS id, ${queue} AS queue, 'completed' AS state, tasks.run_at,
      ${flowSlotReturningSql(queue)}`;
}

/**
 * Whether the completion of task `tasks` (the table, by that name) by one of the items makes it a tombstone
 * (tombstoneCompletedSql): the item's own token (a row value against the items, built once) on a lease still
 * held, each task found by its primary key; the queue's retention looked up once for a scoped ack, per task
 * otherwise.
 */
function keepsNothingSql(fencesJson: string, now: number, scope: AckScope): SQL {
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
