import { ownResults, withRider, type BatchRider } from "./batch-rider";
import { sql, type SQL } from "drizzle-orm";
import { batchAll, type Db } from "../db/client";
import { outcomeEvents, recordCounters, type CounterEvent } from "./counters";
import { EdgeqError, LeaseLostError, NotFoundError, TaskCancelledError } from "../contracts/errors";
import type { TaskState } from "../contracts/states";
import { DEFAULT_QUEUE_CONFIG } from "./queue-config";

/** The outcome of one item of an ack (complete or fail), in input order. */
export type AckOutcome =
  | {
      id: string;
      ok: true;
      queue: string;
      state: TaskState;
      run_at: number;
      children: ChildTask[];
      /** Tasks waiting on this one that its finishing settled (src/engine/dependencies.ts): released
       * (pending) or ended by its failure; only for completions and failures, empty on a repeat. */
      dependents?: SettledDependent[];
      /** The same ack with the same token had already been applied (its answer was lost): nothing changed
       * now; `state` is the task's state today and `children` is empty (they were reported the first time). */
      repeated: boolean;
      /** The lease's new expiry, for writes that keep the lease (extend). */
      lease_expires_at: number | null;
      /** The write ended or handed back an attempt holding a flow slot (flowSlotReturningSql): tasks of its
       * queue waiting for that slot may be leasable now. */
      frees_flow_slot?: boolean;
    }
  | { id: string; ok: false; error: EdgeqError; frees_flow_slot?: boolean; queue?: string };

/** The holder writes that end a lease, recorded in `acked_with` so a repeat is recognised. */
export type AckKind = "complete" | "fail" | "release";

/** The `acked_with` value an ack of `kind` writes (SQL over the item's token). */
export function ackedWithSql(kind: AckKind, token: SQL): SQL {
  return sql`${kind + ":"} || (${token})`;
}

/** A task enqueued by its parent's completion (`then`). */
export interface ChildTask {
  id: string;
  queue: string;
  run_at: number;
}

/** A dependent an ack's task settled: released (pending, due at `run_at`), or ended (dead, cancelled). */
export interface SettledDependent {
  id: string;
  queue: string;
  state: TaskState;
  run_at: number;
  /** On another database, still waiting there: its settlement is owed, for the effects owner to deliver
   * (src/shards/remote-settlements.ts). */
  remote?: boolean;
}

/** Options every ack takes. */
export interface AckScope {
  /** Only tasks of this queue (the ack route's URL); others are not_found. */
  queue?: string;
}

/**
 * The statements of one ack: the fenced UPDATE (its RETURNING rows say what changed) and, optionally,
 * statements run after it in the same D1 batch, inside the same transaction (e.g. children to enqueue).
 */
export interface AckStatements {
  update: SQL;
  /** A second fenced UPDATE run just before `update` in the same batch, over other tasks of the items
   * (keptLeaseSql's `cancel`): its RETURNING rows are changed rows too. */
  alsoUpdate?: SQL;
  after?: SQL;
  /** A read, last in the batch, of the dependents the update settled (`settledDependentsSql`). */
  dependents?: SQL;
  /** A counters upsert (`countersUpsertSql`) run first in the same batch, over the rows the fenced
   * update is about to change — the same fence on the same snapshot (nothing runs between a batch's
   * statements), so it counts exactly what the update does, and counting costs no D1 call of its own. */
  countBefore?: SQL;
  /** Count from the update's answer instead, in a call after the batch (src/engine/counters.ts): the
   * update must also return `tasks.type, tasks.started_at`. `attempt`: a task back to pending or dead
   * counts a failed attempt. `outcomes: false`: `countBefore` counted them. `children`: the `after` rows are
   * tasks enqueued (with `type`), counted here (a call only when there are any). */
  count?: { now: number; attempt: boolean; outcomes?: boolean; children?: boolean };
}

interface UpdatedRow {
  id: string;
  queue: string;
  state: TaskState;
  run_at: number;
  lease_expires_at?: number | null;
  type?: string;
  started_at?: number | null;
  /** flowSlotReturningSql's answer, from the writes that return it. */
  flow_slot?: number;
}

/** A fenced item: the task and the lease token its holder was given. */
export interface FencedItem {
  id: string;
  leaseToken: string;
}

/**
 * The fence every holder write carries: the task is processing, under this very token, and the lease has
 * not expired — an expired lease is void even before the reaper or another lease has seen it. A provisional
 * lease (a long poll's, `claim_by` set) is its holder's until another lease takes the task over, which
 * replaces the token: past its claim window, or taken back by the coordinator, it is only *leasable*, so a
 * live client that is merely slow to make its first call still completes, fails, heartbeats or releases it
 * when nobody else leased it meanwhile, and is refused once somebody did. Every holder write also claims a
 * provisional lease (sets claim_by NULL).
 */
export function leaseFenceSql(id: SQL, token: SQL, now: number, scope: AckScope = {}): SQL {
  const queue = scope.queue === undefined ? sql`` : sql` AND tasks.queue = ${scope.queue}`;
  return sql`tasks.id = ${id} AND tasks.lease_token = ${token} AND tasks.state = 'processing' AND tasks.lease_expires_at > ${now}${queue}`;
}

/**
 * The SET clause of a holder write that keeps the lease (heartbeat, extend) of a task no cancel was asked
 * for (`keptLeaseSql`'s `keep`): the lease runs to `expiresAt` and is claimed. Only the lease's own columns:
 * naming `finished_at` in a SET — even to the NULL it holds — makes SQLite rewrite the task's entry in the
 * live index (finished_at is that partial index's WHERE column), a second billed row on every heartbeat.
 */
export function keepLeaseSetSql(expiresAt: SQL, now: number): SQL {
  return sql`lease_expires_at = ${expiresAt}, claim_by = NULL, updated_at = ${now}`;
}

/** The SET clause that ends, cancelled, a task whose cancel was requested when its holder keeps the lease. */
export function cancelOnKeepSetSql(now: number): SQL {
  return sql`state = 'cancelled', finished_at = ${now}, lease_token = NULL, lease_expires_at = NULL,
    claim_by = NULL, updated_at = ${now}`;
}

/**
 * A holder write that keeps leases, as two fenced UPDATEs for one D1 batch (one transaction; a task is
 * matched by exactly one of them): `cancel` ends the tasks whose cancel was requested, `keep` extends the
 * others with `set` (keepLeaseSetSql and whatever else the write records). Two statements so that the
 * common one, `keep`, never names finished_at: one row written per task kept, not two.
 */
export function keptLeaseSql(
  target: { from?: SQL; where: SQL; returning: SQL },
  set: SQL,
  now: number,
): { cancel: SQL; keep: SQL } {
  const from = target.from ?? sql``;
  return {
    cancel: sql`UPDATE tasks SET ${cancelOnKeepSetSql(now)} ${from}
      WHERE ${target.where} AND tasks.cancel_requested = 1 RETURNING ${target.returning}`,
    keep: sql`UPDATE tasks SET ${set} ${from}
      WHERE ${target.where} AND tasks.cancel_requested = 0 RETURNING ${target.returning}`,
  };
}

/**
 * When a lease kept without a length named (heartbeat, extend) now ends: `now` plus the lease's own length —
 * as it was leased (`lease_visibility_s`: the lease request's, else the queue's then), so a heartbeat never
 * shortens a lease taken for longer than the queue's default. A lease handed out before that column
 * existed has none: the queue's visibility timeout, as before. SQL over the task row being updated.
 */
export function ownLeaseExpirySql(now: number): SQL {
  return sql`(${now} + coalesce(tasks.lease_visibility_s,
    (SELECT q.visibility_timeout_s FROM queues q WHERE q.name = tasks.queue),
    ${DEFAULT_QUEUE_CONFIG.visibility_timeout_s}) * 1000)`;
}

/**
 * Why a fenced write to one task changed nothing: `not_found` when the task does not exist (in `scope`'s
 * queue), otherwise `lease_lost`. The batch form is inside `applyFencedUpdate`.
 *
 * @example
 * if (!changed) throw await fenceMissError(db, id);
 */
export async function fenceMissError(db: Db, id: string, scope: AckScope = {}): Promise<EdgeqError> {
  const queueFilter = scope.queue === undefined ? sql`` : sql` AND queue = ${scope.queue}`;
  const exists = await db.get<{ id: string }>(sql`SELECT id FROM tasks WHERE id = ${id}${queueFilter}`);
  if (exists) return new LeaseLostError(id);
  return new NotFoundError(scope.queue === undefined ? `task ${id}` : `task ${id} in queue ${scope.queue}`);
}

/**
 * Runs one fenced UPDATE over a JSON array of items (`UPDATE ... FROM json_each`) and explains every item
 * it did not change: `not_found` when the task does not exist, otherwise `lease_lost`. A task that ended
 * `cancelled` because a cancel had been requested is reported as `task_cancelled`.
 *
 * An id repeated within one call is applied once, for its first item; every later item for it is
 * `invalid_request` (the UPDATE would apply just one of them, so each could not be told its own outcome).
 *
 * With `ack` (the UPDATE must set `acked_with` with `ackedWithSql`), an item that changed nothing because
 * this very ack with this very token was applied before — its answer was lost and the holder retried —
 * is a success with `repeated: true`, not `lease_lost`: the holder learns its work counted. Another
 * token, or another kind of ack, is still refused. A repeat is recognised until the task's next lease
 * ends (then `acked_with` names that lease's ack); a completion is recognised for as long as it is kept.
 */
export async function applyFencedUpdate(
  db: Db,
  items: FencedItem[],
  run: (itemsJson: string, fencesJson: () => string) => AckStatements,
  scope: AckScope = {},
  ack?: AckKind,
  rider?: BatchRider,
): Promise<AckOutcome[]> {
  const seen = new Set<string>();
  const duplicate = items.map((i) => {
    if (seen.has(i.id)) return true;
    seen.add(i.id);
    return false;
  });
  const unique = items.filter((_, k) => !duplicate[k]);
  const json = JSON.stringify(unique.map((i) => ({ ...i, lease_token: i.leaseToken })));
  // The items with only what the fence reads (no result), for a statement that finds the same tasks:
  // rendered only by the acks that have one (a completion).
  const fences = () => JSON.stringify(unique.map((i) => ({ id: i.id, lease_token: i.leaseToken })));
  const statements = run(json, fences);
  const counted = (statements.countBefore ? 1 : 0) + (statements.alsoUpdate ? 1 : 0);
  const own = [
    ...(statements.countBefore ? [statements.countBefore] : []),
    ...(statements.alsoUpdate ? [statements.alsoUpdate] : []),
    statements.update,
    ...(statements.after ? [statements.after] : []),
    ...(statements.dependents ? [statements.dependents] : []),
  ];
  const results = ownResults(await batchAll<unknown>(db, withRider(own, rider)), own.length, rider);
  const changed = [...(statements.alsoUpdate ? (results[counted - 1] ?? []) : []), ...(results[counted] ?? [])];
  const after = statements.after ? (results[counted + 1] ?? []) : [];
  const dependentsOf = new Map<string, SettledDependent[]>();
  if (statements.dependents) {
    const seen = new Set<string>();
    for (const d of (results.at(-1) ?? []) as Array<SettledDependent & { by_id: string }>) {
      if (seen.has(d.id)) continue; // released by several items of this ack: reported once
      seen.add(d.id);
      const list = dependentsOf.get(d.by_id) ?? [];
      list.push({ id: d.id, queue: d.queue, state: d.state, run_at: d.run_at, ...(d.remote ? { remote: true } : {}) });
      dependentsOf.set(d.by_id, list);
    }
  }
  if (statements.count) await countChanged(db, changed as UpdatedRow[], after, statements.count);
  const byId = new Map((changed as UpdatedRow[]).map((r) => [r.id, r]));
  const childrenOf = new Map<string, ChildTask[]>();
  for (const child of after as Array<ChildTask & { parent_id: string }>) {
    const list = childrenOf.get(child.parent_id) ?? [];
    list.push({ id: child.id, queue: child.queue, run_at: child.run_at });
    childrenOf.set(child.parent_id, list);
  }
  const missing = unique.filter((i) => !byId.has(i.id)).map((i) => i.id);
  const queueFilter = scope.queue === undefined ? sql`` : sql` AND queue = ${scope.queue}`;
  const existing = new Map(
    missing.length
      ? (
          await db.all<UpdatedRow & { acked_with: string | null }>(
            sql`SELECT id, queue, state, run_at, acked_with FROM tasks
              WHERE id IN (SELECT value FROM json_each(${JSON.stringify(missing)}))${queueFilter}`,
          )
        ).map((r) => [r.id, r])
      : [],
  );
  return items.map((item, k): AckOutcome => {
    if (duplicate[k]) {
      return {
        id: item.id,
        ok: false,
        error: new EdgeqError(
          "invalid_request",
          `task ${item.id} appears more than once; only its first item was applied`,
        ),
      };
    }
    let row = byId.get(item.id);
    let repeated = false;
    const stored = existing.get(item.id);
    if (!row && ack !== undefined && stored?.acked_with === `${ack}:${item.leaseToken}`) {
      row = stored;
      repeated = true;
    }
    if (!row) {
      return {
        id: item.id,
        ok: false,
        error: existing.has(item.id)
          ? new LeaseLostError(item.id)
          : new NotFoundError(
              scope.queue === undefined ? `task ${item.id}` : `task ${item.id} in queue ${scope.queue}`,
            ),
      };
    }
    if (row.state === "cancelled") {
      return {
        id: item.id,
        ok: false,
        error: new TaskCancelledError(item.id),
        ...(row.flow_slot === 1 && !repeated ? { frees_flow_slot: true, queue: row.queue } : {}),
      };
    }
    return {
      id: item.id,
      ok: true,
      queue: row.queue,
      state: row.state,
      run_at: row.run_at,
      children: childrenOf.get(item.id) ?? [],
      ...(statements.dependents ? { dependents: repeated ? [] : (dependentsOf.get(item.id) ?? []) } : {}),
      repeated,
      lease_expires_at: row.lease_expires_at ?? null,
      ...(row.flow_slot === 1 && !repeated ? { frees_flow_slot: true } : {}),
    };
  });
}

/** Adds what one fenced update changed to the task counters (one upsert; see src/engine/counters.ts). */
async function countChanged(
  db: Db,
  changed: UpdatedRow[],
  after: unknown[],
  count: NonNullable<AckStatements["count"]>,
): Promise<void> {
  const outcomes = count.outcomes === false ? [] : changed;
  const events: CounterEvent[] = outcomes.flatMap((r) =>
    outcomeEvents(
      { queue: r.queue, type: r.type ?? "default", state: r.state, started_at: r.started_at ?? null },
      count.now,
      count.attempt,
    ),
  );
  if (count.children) {
    for (const child of after as Array<{ queue: string; type: string }>) {
      events.push({ queue: child.queue, type: child.type, counter: "enqueued" });
    }
  }
  await recordCounters(db, events, count.now);
}
