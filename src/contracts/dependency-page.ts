import type { TaskState } from "./states";

/** One dependency of a task as its dependent reads it. */
export interface DependencyEntry {
  id: string;
  /** Null when the dependency was pruned since (retention): it had finished. */
  queue: string | null;
  type: string | null;
  /** Its state now, or null when pruned. */
  state: TaskState | null;
  /** Its result as JSON text when it completed with one of at most MAX_INLINE_DEPENDENCY_RESULT_BYTES;
   * null otherwise (see `resultBytes`). */
  result: string | null;
  /** The size of its stored result in bytes of JSON, or null without one: a result too large to be given
   * inline is read with GET /v1/tasks/{id}. */
  resultBytes: number | null;
}

/** One dependent of a task: a task that waits, or waited, for it. */
export interface DependentEntry {
  id: string;
  queue: string;
  type: string;
  state: TaskState;
  /** What this task's finishing was counted as for it (its final state), or null while unfinished. */
  outcome: string | null;
}

/** A page of entries in id order, and where the next one starts. */
export interface DependencyPage<T> {
  entries: T[];
  nextCursor: string | null;
}

/**
 * A page of dependencies as the API answers it (GET /v1/tasks/{id}/dependencies, a processor's
 * `ctx.dependencies()`): each result parsed, `null` over MAX_INLINE_DEPENDENCY_RESULT_BYTES.
 *
 * @example
 * const body = dependencyPageView(await store.listDependencies(id, { limit: 100 }));
 */
export function dependencyPageView({ entries, nextCursor }: DependencyPage<DependencyEntry>) {
  return {
    dependencies: entries.map((e) => ({
      id: e.id,
      queue: e.queue,
      type: e.type,
      state: e.state,
      result: e.result === null ? null : (JSON.parse(e.result) as unknown),
      result_bytes: e.resultBytes,
    })),
    next_cursor: nextCursor,
  };
}
