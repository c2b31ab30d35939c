import { EdgeqError } from "../contracts/errors";
import type { StoredTask } from "../contracts/stored-task";
import { MAX_INLINE_DEPENDENCY_RESULT_BYTES } from "../contracts/limits";
import type { DependencyEntry, DependencyPage, DependentEntry } from "../engine/dependency-reads";
import type { HeartbeatRequest } from "../engine/heartbeat";
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
 * A page of a task's dependencies with their states and bounded results (src/engine/dependency-reads.ts),
 * read on the task's shard: what a join reads of its children. A dependency the task's database does not
 * hold is on another shard or pruned: each such one is looked up by id wherever it lives (at most a page of
 * reads), and stays null only when it is pruned.
 *
 * @example
 * const { entries } = await readDependencies(op, joinId, { limit: 100 });
 */
export async function readDependencies(
  op: OperationContext,
  id: string,
  page: { cursor?: string; limit: number },
): Promise<DependencyPage<DependencyEntry>> {
  const found = await onTaskShard(op.env, id, (shard) => shard.store.listDependencies(id, page));
  const entries = await Promise.all(
    found.entries.map(async (entry) => (entry.queue !== null ? entry : ((await elsewhere(op, entry.id)) ?? entry))),
  );
  return { ...found, entries };
}

/** A dependency read on whichever shard holds it, its result inline up to the page's bound; null if pruned. */
async function elsewhere(op: OperationContext, id: string): Promise<DependencyEntry | null> {
  const task = await readTask(op, id).catch((error: unknown) => {
    if (error instanceof EdgeqError && error.code === "not_found") return null;
    throw error;
  });
  if (task === null) return null;
  // Bytes of UTF-8, as SQLite's length(CAST(result AS BLOB)) counts them on the task's own shard.
  const bytes = task.result === null ? null : new TextEncoder().encode(task.result).length;
  return {
    id,
    queue: task.queue,
    type: task.type,
    state: task.state,
    result: bytes !== null && bytes <= MAX_INLINE_DEPENDENCY_RESULT_BYTES ? task.result : null,
    resultBytes: bytes,
  };
}

/**
 * A page of the tasks that depend on a task: read on its shard, each dependent on another shard then read
 * where it lives for its type and state (one lookup by id per such entry); one pruned there since is left
 * out, as a pruned dependent on the task's own shard is.
 *
 * @example
 * const { entries } = await readDependents(op, childId, { limit: 100 });
 */
export async function readDependents(
  op: OperationContext,
  id: string,
  page: { cursor?: string; limit: number },
): Promise<DependencyPage<DependentEntry>> {
  const found = await onTaskShard(op.env, id, (shard) => shard.store.listDependents(id, page));
  const entries = await Promise.all(
    found.entries.map(async (entry): Promise<DependentEntry | null> => {
      if (!entry.remote) return entry;
      const task = await readTask(op, entry.id).catch((error: unknown) => {
        if (error instanceof EdgeqError && error.code === "not_found") return null;
        throw error;
      });
      return task && { id: entry.id, queue: task.queue, type: task.type, state: task.state, outcome: entry.outcome };
    }),
  );
  return { ...found, entries: entries.filter((e) => e !== null) };
}
