import { EdgeqError } from "../contracts/errors";
import { isSessionHolder } from "../contracts/session";
import type { StoredTask } from "../contracts/stored-task";
import type { HeartbeatRequest } from "../engine/store";
import { dependencyPageAnywhere, dependentPageAnywhere, type PageRequest } from "../shards/dependency-pages";
import { onTaskShard } from "../shards/task-locator";
import type { OperationContext } from "./context";

/**
 * A task by id, wherever it lives.
 *
 * @example
 * const row = await readTask(op, id);
 */
export function readTask(op: OperationContext, id: string): Promise<StoredTask> {
  return onTaskShard(op.env, id, (shard) => shard.store.getTask(id));
}

/**
 * Heartbeats a running task (fenced by its lease token): extends the lease by `extendS` (absent: the
 * lease's own length, as it was leased — never the queue's default cutting a longer lease short) and
 * records progress or a checkpoint; progress is published. One statement: the default is read in SQL.
 *
 * @example
 * const row = await heartbeat(op, { id, leaseToken, progress: 40, progressMessage: "3/7" });
 */
export async function heartbeat(op: OperationContext, request: HeartbeatRequest): Promise<StoredTask> {
  const row = await onTaskShard(op.env, request.id, (shard) => shard.store.heartbeatTask(request, op.now)).catch(
    async (error: unknown) => {
      // `task_cancelled`: this heartbeat found the cancel request and ended the task cancelled — a change.
      if (error instanceof EdgeqError && error.code === "task_cancelled") {
        const { queue, flowKey } = await readTask(op, request.id);
        // A keyed task ended while running: its key's slot is free.
        op.effects.after({ kind: "cancelled", queue, ids: [request.id], freesFlowKey: flowKey !== null });
      }
      throw error;
    },
  );
  if (request.progress !== undefined || request.progressMessage !== undefined) {
    op.effects.after({ kind: "progress", queue: row.queue, id: row.id });
  }
  return row;
}

/**
 * Cancels a task: a pending one at once, a running one when its holder next writes (cancel requested).
 *
 * @example
 * const row = await cancel(op, id); // row.state "cancelled", or "processing" with cancel requested
 */
export async function cancel(op: OperationContext, id: string): Promise<StoredTask> {
  const { row, dependents } = await onTaskShard(op.env, id, async (shard) => {
    const row = await shard.store.cancelTask(id, op.now);
    // Its waiting dependents were settled by the same statement: released or ended, read for their effects.
    const dependents = row.state === "cancelled" ? await shard.store.settledDependents([id], op.now) : [];
    return { row, dependents };
  });
  if (row.state === "cancelled") {
    // A keyed task that had started (a retry waiting its turn) may have held an ordered key.
    const freesFlowKey = row.flowKey !== null && row.startedAt !== null;
    op.effects.after({ kind: "cancelled", queue: row.queue, ids: [row.id], freesFlowKey });
  }
  // Running under a worker session: no beat of its worker asks the server soon, so its session is told now.
  if (row.state === "processing" && isSessionHolder(row.leaseHolder)) {
    op.effects.after({ kind: "cancel-requested", queue: row.queue });
  }
  if (dependents.length > 0) op.effects.after({ kind: "dependents-settled", dependents });
  return row;
}

/**
 * Puts a dead or cancelled task back to pending now, attempts reset.
 *
 * @example
 * const row = await retry(op, id);
 */
export async function retry(op: OperationContext, id: string): Promise<StoredTask> {
  const row = await onTaskShard(op.env, id, (shard) => shard.store.retryTask(id, op.now));
  op.effects.after({ kind: "redriven", queue: row.queue, ids: [row.id], runAt: op.now });
  return row;
}

/**
 * A page of a task's dependencies, each read where it lives (src/shards/dependency-pages.ts).
 *
 * @example
 * const { entries, nextCursor } = await readDependencies(op, joinId, { limit: 100 });
 */
export function readDependencies(op: OperationContext, id: string, page: PageRequest) {
  return dependencyPageAnywhere(op.env, id, page);
}

/**
 * A page of the tasks that depend on a task, each read where it lives (src/shards/dependency-pages.ts).
 *
 * @example
 * const { entries } = await readDependents(op, childId, { limit: 100 });
 */
export function readDependents(op: OperationContext, id: string, page: PageRequest) {
  return dependentPageAnywhere(op.env, id, page);
}
