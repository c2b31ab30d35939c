import type { SettledDependent } from "./ack";
import type { DependencyEntry, DependencyPage, StoredDependent } from "./dependency-reads";
import type { TaskField, NewTask } from "./enqueue-rows";
import type { FanOutResult } from "./fan-out";

/**
 * Dependencies between tasks of one store (src/engine/dependencies.ts): a task enqueued with `dependsOn`
 * (through `enqueueTasks`) waits until every dependency finished. The store settles a dependency's dependents
 * atomically with whatever finishes it (a completion, a failure, the reaper, a cancel), releasing each
 * dependent once, never leaving one waiting on a finished task; a failed dependency ends a dependent as its
 * policy says (src/contracts/dependencies.ts).
 */
export interface Dependencies {
  /**
   * Enqueues `children` and a `join` that depends on all of them (and on the join's own `dependsOn`) in
   * `queue`, atomically: all or nothing. At most MAX_FAN_OUT children, one enqueue statement's JSON; no
   * dedupe keys. Refusals name the field (`tasks[i].…`, `join.…`), before anything is stored.
   */
  enqueueFanOut(
    queue: string,
    children: NewTask[],
    join: NewTask,
    now: number,
    field?: TaskField,
  ): Promise<FanOutResult>;
  /** A page of a task's dependencies in id order, each with its state and its result when at most
   * MAX_INLINE_DEPENDENCY_RESULT_BYTES (`resultBytes` otherwise). `not_found` for an unknown task. */
  listDependencies(id: string, page: { cursor?: string; limit: number }): Promise<DependencyPage<DependencyEntry>>;
  /** A page of the tasks that depend on a task, in id order, each with the outcome its finishing was counted
   * as: those in this store, and those elsewhere it owes (or owed) a settlement (`remote`, type and state
   * null: read where they live). `not_found` for an unknown task. */
  listDependents(id: string, page: { cursor?: string; limit: number }): Promise<DependencyPage<StoredDependent>>;
  /** The dependents that `ids` finishing at `now` settled (released: pending; or ended by a failure), each
   * once: read after a cancel or a reap, whose writes do not report them, for the effects owner. */
  settledDependents(ids: string[], now: number): Promise<SettledDependent[]>;
}
