import { sql, type SQL } from "drizzle-orm";
import { batchAll, type Db } from "../db/client";
import { EdgeqError, LeaseLostError, NotFoundError } from "./errors";
import type { TaskState } from "./states";

/** The outcome of one item of an ack (complete or fail), in input order. */
export type AckOutcome =
  | { id: string; ok: true; queue: string; state: TaskState; run_at: number; children: ChildTask[] }
  | { id: string; ok: false; error: EdgeqError };

/** A task enqueued by its parent's completion (`then`). */
export interface ChildTask {
  id: string;
  queue: string;
  run_at: number;
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
  after?: SQL;
}

interface UpdatedRow {
  id: string;
  queue: string;
  state: TaskState;
  run_at: number;
}

/** A fenced item: the task and the lease token its holder was given. */
export interface FencedItem {
  id: string;
  leaseToken: string;
}

/**
 * The fence every holder write carries: the task is processing, under this very token, and the lease
 * has not expired — an expired lease is void even before the reaper has seen it.
 */
export function leaseFenceSql(id: SQL, token: SQL, now: number, scope: AckScope = {}): SQL {
  const queue = scope.queue === undefined ? sql`` : sql` AND tasks.queue = ${scope.queue}`;
  return sql`tasks.id = ${id} AND tasks.lease_token = ${token} AND tasks.state = 'processing' AND tasks.lease_expires_at > ${now}${queue}`;
}

/**
 * Runs one fenced UPDATE over a JSON array of items (`UPDATE ... FROM json_each`) and explains every item
 * it did not change: `not_found` when the task does not exist, otherwise `lease_lost`. A task that ended
 * `cancelled` because a cancel had been requested is reported as `task_cancelled`.
 *
 * An id repeated within one call is applied once, for its first item; every later item for it is
 * `invalid_request` (the UPDATE would apply just one of them, so each could not be told its own outcome).
 */
export async function applyFencedUpdate(
  db: Db,
  items: FencedItem[],
  run: (itemsJson: string) => AckStatements,
  scope: AckScope = {},
): Promise<AckOutcome[]> {
  const seen = new Set<string>();
  const repeated = items.map((i) => {
    if (seen.has(i.id)) return true;
    seen.add(i.id);
    return false;
  });
  const unique = items.filter((_, k) => !repeated[k]);
  const json = JSON.stringify(unique.map((i) => ({ ...i, lease_token: i.leaseToken })));
  const statements = run(json);
  const [changed = [], after = []] = await batchAll<unknown>(
    db,
    statements.after ? [statements.update, statements.after] : [statements.update],
  );
  const byId = new Map((changed as UpdatedRow[]).map((r) => [r.id, r]));
  const childrenOf = new Map<string, ChildTask[]>();
  for (const child of after as Array<ChildTask & { parent_id: string }>) {
    const list = childrenOf.get(child.parent_id) ?? [];
    list.push({ id: child.id, queue: child.queue, run_at: child.run_at });
    childrenOf.set(child.parent_id, list);
  }
  const missing = unique.filter((i) => !byId.has(i.id)).map((i) => i.id);
  const queueFilter = scope.queue === undefined ? sql`` : sql` AND queue = ${scope.queue}`;
  const existing = missing.length
    ? new Set(
        (
          await db.all<{ id: string }>(
            sql`SELECT id FROM tasks WHERE id IN (SELECT value FROM json_each(${JSON.stringify(missing)}))${queueFilter}`,
          )
        ).map((r) => r.id),
      )
    : new Set<string>();
  return items.map((item, k): AckOutcome => {
    if (repeated[k]) {
      return {
        id: item.id,
        ok: false,
        error: new EdgeqError(
          "invalid_request",
          `task ${item.id} appears more than once; only its first item was applied`,
        ),
      };
    }
    const row = byId.get(item.id);
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
        error: new EdgeqError("task_cancelled", `task ${item.id}: a cancel was requested; the task is now cancelled`),
      };
    }
    return {
      id: item.id,
      ok: true,
      queue: row.queue,
      state: row.state,
      run_at: row.run_at,
      children: childrenOf.get(item.id) ?? [],
    };
  });
}
