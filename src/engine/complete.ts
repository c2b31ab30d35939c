import { sql, type SQL } from "drizzle-orm";
import { encodeTime } from "ulid";
import type { Db } from "../db/client";
import type { BatchRider } from "./batch-rider";
import { ackedWithSql, applyFencedUpdate, leaseFenceSql, type AckOutcome, type AckScope, type FencedItem } from "./ack";
import { flowSlotReturningSql } from "./flow-control";
import { DEFAULT_QUEUE_CONFIG } from "./queue-config";
import { storedJsonError } from "../contracts/json-value";
import { minuteOf } from "./counters";
import { appendUncountedSql, counterEventSql, countedInRowSql, eventsUpsertSql } from "./counters-in-row";
import { settledDependentsSql } from "./dependencies";
import { flowUnkeyedSql } from "./flow-lease";
import { tombstoneCompletedSql } from "./complete-tombstone";

export interface CompleteItem extends FencedItem {
  /** Any JSON value; stored as the task's result. */
  result?: unknown;
}

/**
 * Enqueues the `then` children of every task this ack just completed — the statement after the fenced
 * UPDATE in the same D1 batch, so a parent is never completed without its children and a parent that
 * was not completed (stale token, cancelled, failed) never gets any. Children inherit the parent's
 * queue, group and priority unless their spec overrides them; their payload receives
 * `parent: { id, type, result }`. Ids are ULIDs of `now` (time prefix, the parent's slot characters, 48
 * random bits), so purges keep walking ids in time order and a child is found on its parent's shard
 * (src/shards/task-slot.ts) — where it is created, and from where the relay takes a child of a queue
 * placed elsewhere. A child of the parent's queue joins the parent's partition: its id carries the
 * parent's slot characters, and a parent whose id does not carry its slot passes on its `slot` column. A child whose dedupe key is live is not enqueued twice (ON CONFLICT).
 * Parents are looked up by primary key from the ack's distinct items, never found by scanning for the
 * nonce: lease_token has no index, and that scan read the whole table (every row billed) on every ack.
 */
function enqueueChildrenSql(ackNonce: string, fencesJson: string, now: number): SQL {
  const childQueue = sql`coalesce(c.value->>'queue', p.queue)`;
  return sql`INSERT INTO tasks
      (id, queue, type, state, priority, payload, max_attempts, run_at, dedupe_key, group_key, then_tasks,
       slot, flow_key, flow_unkeyed, created_at, updated_at)
    SELECT ${encodeTime(now, 10)} || substr(p.id, 11, 4) || upper(hex(randomblob(6))), ${childQueue}, c.value->>'type', 'pending',
      coalesce(c.value->>'priority', p.priority),
      json_set(coalesce(c.value->'payload', '{}'), '$.parent',
        json_object('id', p.id, 'type', p.type, 'result', json(coalesce(p.result, 'null')))),
      coalesce(c.value->>'max_attempts', (SELECT q.max_attempts FROM queues q WHERE q.name = ${childQueue}),
        ${DEFAULT_QUEUE_CONFIG.max_attempts}),
      ${now} + CAST(round(coalesce(c.value->>'delay_s', 0) * 1000) AS INTEGER),
      c.value->>'dedupe_key', coalesce(c.value->>'group', p.group_key),
      CASE WHEN c.value->>'then' IS NULL THEN NULL ELSE c.value->'then' END,
      CASE WHEN ${childQueue} = p.queue THEN p.slot END, coalesce(c.value->>'key', p.flow_key),
      ${flowUnkeyedSql(sql`coalesce(c.value->>'key', p.flow_key)`, childQueue)}, ${now}, ${now}
    FROM json_each(${fencesJson}) AS j JOIN tasks p ON p.id = j.value->>'id', json_each(p.then_tasks) AS c
    WHERE p.lease_token = ${ackNonce} AND p.state = 'completed' AND p.then_tasks IS NOT NULL
    ON CONFLICT DO NOTHING
    RETURNING id, queue, type, run_at, json_extract(payload, '$.parent.id') AS parent_id`;
}

/** A completed task's new state: cancelled instead when a cancel was requested meanwhile. */
const COMPLETED_STATE = sql`CASE WHEN tasks.cancel_requested = 1 THEN 'cancelled' ELSE 'completed' END`;

/** A completion's counter event over the task `tasks`: completed with its run time since the first lease, or
 * cancelled for a task whose cancel had been requested (COMPLETED_STATE, as the update sets it). */
function completionEventSql(now: number): { c: SQL; ms: SQL } {
  return {
    c: sql`CASE WHEN tasks.cancel_requested = 1 THEN 'cancelled' ELSE 'completed' END`,
    ms: sql`CASE WHEN tasks.cancel_requested = 0 AND tasks.started_at IS NOT NULL THEN ${now} - tasks.started_at END`,
  };
}

/**
 * The counters of a completion (src/engine/counters.ts), run first in its batch over the tasks its fence
 * admits, each found by primary key: its completion (completionEventSql) — except for a task whose row keeps
 * its counter events (src/engine/counters-in-row.ts): the update, or the tombstone a queue that keeps nothing
 * makes of it (complete-tombstone.ts), appends it there.
 */
function countCompletionSql(fencesJson: string, now: number, scope: AckScope): SQL {
  const { c, ms } = completionEventSql(now);
  return eventsUpsertSql(sql`SELECT tasks.queue AS queue, tasks.type AS type, ${c} AS c, ${minuteOf(now)} AS minute,
        ${ms} AS ms
      FROM json_each(${fencesJson}) AS j JOIN tasks
        ON ${leaseFenceSql(sql`j.value->>'id'`, sql`j.value->>'lease_token'`, now, scope)}
      WHERE NOT ${countedInRowSql(sql`tasks`)}`);
}

/** A completion's `uncounted` for task `tasks`: its event appended while the row keeps them. */
function completionUncountedSql(now: number): SQL {
  const { c, ms } = completionEventSql(now);
  return appendUncountedSql(sql`tasks`, [counterEventSql(c, now, ms)]);
}

/**
 * Completes up to MAX_BATCH processing tasks in one fenced statement. Each item succeeds or fails on its
 * own: a wrong, stale or expired token is `lease_lost` and changes nothing for that task. A task whose
 * cancel was requested ends `cancelled` instead (its result discarded) and reports `task_cancelled`.
 * A result over MAX_PAYLOAD_BYTES of JSON is `payload_too_large`, one that cannot be stored exactly as sent
 * (too deep, a non-finite number, a lone surrogate: `jsonValueProblem`) is `invalid_request`; either
 * changes nothing for that task. Repeating a complete that was applied answers `repeated: true`. A `rider`'s
 * statements go after the completion's in its batch (an ack carrying the next lease: batch-rider.ts).
 *
 * @example
 * const [outcome] = await completeTasks(db, [{ id, leaseToken, result: { ok: true } }], Date.now());
 */
export async function completeTasks(
  db: Db,
  items: CompleteItem[],
  now: number,
  scope: AckScope = {},
  rider?: BatchRider,
): Promise<AckOutcome[]> {
  // Ties the children insert below to this very completion: only rows this statement completed carry it.
  const ackNonce = `ack:${crypto.randomUUID()}`;
  // Checked per item, before SQL: one bad result fails its own item only, never the batch's statement.
  const problems = items.map((i) => storedJsonError(i.result, "result", `task ${i.id}: `));
  const fitting = items.filter((_, k) => problems[k] === null);
  const applied = fitting.length
    ? await applyFencedUpdate(
        db,
        fitting.map((i) => ({ id: i.id, leaseToken: i.leaseToken, result: i.result ?? null })),
        (json, fencesJson) => {
          const fences = fencesJson();
          return {
            update: sql`UPDATE tasks SET
        state = ${COMPLETED_STATE},
        result = CASE WHEN tasks.cancel_requested = 1 THEN NULL ELSE j.value->'result' END,
        progress = CASE WHEN tasks.cancel_requested = 1 THEN tasks.progress ELSE 100 END,
        finished_at = ${now},
        lease_token = CASE WHEN tasks.cancel_requested = 0 AND tasks.then_tasks IS NOT NULL THEN ${ackNonce} END,
        lease_expires_at = NULL,
        claim_by = NULL,
        acked_with = ${ackedWithSql("complete", sql`j.value->>'lease_token'`)},
        updated_at = ${now},
        uncounted = ${completionUncountedSql(now)}
      FROM json_each(${json}) AS j
      WHERE ${leaseFenceSql(sql`j.value->>'id'`, sql`j.value->>'lease_token'`, now, scope)}
      RETURNING tasks.id, tasks.queue, tasks.state, tasks.run_at, ${flowSlotReturningSql()}`,
            alsoUpdate: tombstoneCompletedSql(fences, now, scope, completionUncountedSql(now)),
            after: enqueueChildrenSql(ackNonce, fences, now),
            dependents: settledDependentsSql(fences, now),
            countBefore: countCompletionSql(fences, now, scope),
            count: { now, attempt: false, outcomes: false, children: true },
          };
        },
        scope,
        "complete",
        rider,
      )
    : [];
  let next = 0;
  return items.map((item, k): AckOutcome => {
    const problem = problems[k];
    return problem ? { id: item.id, ok: false, error: problem } : applied[next++]!;
  });
}
