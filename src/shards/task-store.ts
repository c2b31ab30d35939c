import type { Db } from "../db/client";
import type { Env } from "../env";
import type { EnqueueResult, NewTask } from "../engine/store";
import { enqueueToQueue } from "./queue-ops";
import { queueRoute } from "./queue-route";
import { NotFoundError } from "../contracts/errors";
import { isTaskMissing, onTaskShard } from "./task-locator";
import { taskStoreOn } from "./shard-set";

/** What an enqueue answers, with the partitions that received new tasks (whose coordinators to wake). */
export type EnqueuedTasks = EnqueueResult & { parts: number[] };

/**
 * What a caller outside the request path (schedules) needs of tasks: enqueue into a queue, read a task's
 * state. `shardedTaskStore` routes through the directory; `dbTaskStore` is one database (tests, tools).
 */
export interface TaskStore {
  enqueue(queue: string, tasks: NewTask[], now: number): Promise<EnqueuedTasks>;
  /** The task's state, or null when there is no such task. */
  taskState(id: string): Promise<string | null>;
}

export function dbTaskStore(db: Db): TaskStore {
  const store = taskStoreOn(db);
  return {
    // One database: partition 0, when anything new was written.
    enqueue: async (queue, tasks, now) => {
      const result = await store.enqueueTasks(queue, tasks, now);
      return { ...result, parts: result.tasks.some((t) => !t.deduplicated) ? [0] : [] };
    },
    taskState: (id) => store.findTaskState(id),
  };
}

export function shardedTaskStore(env: Env): TaskStore {
  return {
    enqueue: async (queue, tasks, now) => enqueueToQueue(env, await queueRoute(env, queue, now), tasks, now),
    taskState: async (id) => {
      try {
        return await onTaskShard(env, id, async (shard) => {
          const state = await shard.store.findTaskState(id);
          if (state === null) throw new NotFoundError(`task ${id}`);
          return state;
        });
      } catch (error) {
        if (isTaskMissing(error)) return null;
        throw error;
      }
    },
  };
}
