import type { Db } from "../db/client";
import type { StoredTask } from "../contracts/stored-task";
import { MAX_DEPENDENCY_PAGE } from "../contracts/limits";
import { dependencyPageView, type DependencyEntry, type DependencyPage } from "../contracts/dependency-page";
import type { TaskStore } from "../engine/store";
import type { Env } from "../env";
import type { ProcessorContext } from "../processors/types";
import { taskArtifacts } from "../storage/artifacts";

/** A fenced heartbeat of the running task, carrying progress and/or a checkpoint. */
export type Beat = (fields: { progress?: number; progressMessage?: string; checkpoint?: unknown }) => Promise<void>;

/** A page of a task's dependencies, each read wherever it lives. */
export type DependencyReader = (
  id: string,
  page: { cursor?: string; limit: number },
) => Promise<DependencyPage<DependencyEntry>>;

/** What `processorContext` binds: the leased task and the dispatcher's own handles. */
export interface ProcessorContextDeps {
  /** The task's store: its completed results are read through it, and its dependencies without `dependencies`. */
  store: TaskStore;
  /** Reads dependencies across shards (a dependency on another shard with its state and result); absent,
   * the store's own page, where such a dependency shows as a pruned one. */
  dependencies?: DependencyReader;
  db: Db;
  env: Env;
  now: () => number;
  signal: AbortSignal;
  /** Heartbeats the task (fenced by its lease token); aborts `signal` when the task is cancelled or lost. */
  beat: Beat;
}

/**
 * The context a processor runs one leased task with: progress and checkpoints as fenced heartbeats,
 * the task's own artifacts, completed results, its shard's database for the processor's own tables,
 * and the Worker's whole env.
 *
 * @example
 * const ctx = processorContext(task, { store, db, env, now, signal: abort.signal, beat });
 */
export function processorContext(task: StoredTask, deps: ProcessorContextDeps): ProcessorContext {
  const { store, db, env, now, beat } = deps;
  return {
    taskId: task.id,
    queue: task.queue,
    type: task.type,
    group: task.groupKey,
    attempt: task.attempts,
    env,
    now,
    signal: deps.signal,
    checkpoint: task.checkpoint == null ? null : JSON.parse(task.checkpoint),
    progress: (percent, message) => beat({ progress: clampPercent(percent), progressMessage: message }),
    saveCheckpoint: (value, progress) =>
      beat({
        checkpoint: value,
        progress: progress === undefined ? undefined : clampPercent(progress.percent),
        progressMessage: progress?.message,
      }),
    artifacts: taskArtifacts(env.ARTIFACTS, task.id),
    dependencies: async (page = {}) => {
      const request = {
        cursor: page.cursor,
        limit: Math.max(1, Math.min(page.limit ?? MAX_DEPENDENCY_PAGE, MAX_DEPENDENCY_PAGE)),
      };
      const read = deps.dependencies ?? ((id: string, p: typeof request) => store.listDependencies(id, p));
      return dependencyPageView(await read(task.id, request));
    },
    results: { completed: (scope, limit, pick) => store.collectCompletedResults(scope, limit, pick) },
    db: db.$client,
  };
}

function clampPercent(percent: number): number {
  return Math.max(0, Math.min(100, Math.round(percent)));
}
