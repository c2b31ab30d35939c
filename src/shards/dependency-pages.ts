import { MAX_INLINE_DEPENDENCY_RESULT_BYTES } from "../contracts/limits";
import type { StoredTask } from "../contracts/stored-task";
import type { DependencyEntry, DependencyPage, DependentEntry } from "../contracts/dependency-page";
import type { Env } from "../env";
import { isTaskMissing, onTaskShard } from "./task-locator";

/** A page of dependencies or dependents: after `cursor`, at most `limit`. */
export interface PageRequest {
  cursor?: string;
  limit: number;
}

/** A task by id on whichever shard holds it, or null when it is nowhere (pruned). */
async function taskAnywhere(env: Env, id: string): Promise<StoredTask | null> {
  return onTaskShard(env, id, (shard) => shard.store.getTask(id)).catch((error: unknown) => {
    if (isTaskMissing(error)) return null;
    throw error;
  });
}

/**
 * A page of a task's dependencies, read on its shard; a dependency the task's own database does not hold (on
 * another shard: its store answers it as a pruned one) is then read where it lives, one lookup by id per
 * such entry, with its result inline up to the page's bound. Used by the API (src/operations/task.ts) and by
 * a push processor's `ctx.dependencies()` (the coordinator hands it to push dispatch).
 *
 * @example
 * const { entries, nextCursor } = await dependencyPageAnywhere(env, joinId, { limit: 100 });
 */
export async function dependencyPageAnywhere(
  env: Env,
  id: string,
  page: PageRequest,
): Promise<DependencyPage<DependencyEntry>> {
  const found = await onTaskShard(env, id, (shard) => shard.store.listDependencies(id, page));
  const entries = await Promise.all(
    found.entries.map(async (entry) => {
      if (entry.queue !== null) return entry;
      const task = await taskAnywhere(env, entry.id);
      if (task === null) return entry;
      // Bytes of UTF-8, as SQLite's length(CAST(result AS BLOB)) counts them on the task's own shard.
      const bytes = task.result === null ? null : new TextEncoder().encode(task.result).length;
      return {
        id: entry.id,
        queue: task.queue,
        type: task.type,
        state: task.state,
        result: bytes !== null && bytes <= MAX_INLINE_DEPENDENCY_RESULT_BYTES ? task.result : null,
        resultBytes: bytes,
      };
    }),
  );
  return { ...found, entries };
}

/**
 * A page of the tasks that depend on a task: read on its shard, each dependent on another shard then read
 * where it lives for its type and state (one lookup by id per such entry); one pruned there since is left
 * out, as a pruned dependent on the task's own shard is.
 *
 * @example
 * const { entries } = await dependentPageAnywhere(env, childId, { limit: 100 });
 */
export async function dependentPageAnywhere(
  env: Env,
  id: string,
  page: PageRequest,
): Promise<DependencyPage<DependentEntry>> {
  const found = await onTaskShard(env, id, (shard) => shard.store.listDependents(id, page));
  const entries = await Promise.all(
    found.entries.map(async (entry): Promise<DependentEntry | null> => {
      if (!entry.remote) return entry;
      const task = await taskAnywhere(env, entry.id);
      return task && { id: entry.id, queue: task.queue, type: task.type, state: task.state, outcome: entry.outcome };
    }),
  );
  return { ...found, entries: entries.filter((e) => e !== null) };
}
