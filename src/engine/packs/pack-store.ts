import type { Db } from "../../db/client";
import type { TaskStore } from "../store";
import {
  getQueueConfig,
  listConfiguredQueues,
  putQueueConfig,
  readQueueRecord,
  replaceQueueRecord,
  storeQueueConfig,
} from "../queue-config";
import { enqueuePackTasks } from "./enqueue";
import {
  assertPackLeaseHeld,
  completePackTasks,
  extendPackLeases,
  failPackTasks,
  heartbeatPackTask,
  releasePackTasks,
} from "./holder-writes";
import { leasePackAnswers, leasePackTasks } from "./lease";
import { cancelPackQueueTasks, cancelPackTask, redrivePackQueue, retryPackTask } from "./operator-writes";
import { findPackTaskState, getPackTask, listPackTasks, packQueueStats } from "./reads";
import { prunePacksByRetention } from "./retention";
import { reapPackExpiredLeases, reapPackLapsedLeases } from "./upkeep";

/** The groups of the task-store port (src/engine/store.ts), by name: what a store implements, and what a
 * conformance file needs (test/engine/conformance/store-kinds.ts). */
export const STORE_GROUPS = {
  /** Tasks in, leases out, the holder's fenced writes, reads by id. */
  core: [
    "enqueueTasks",
    "leaseTasks",
    "leaseAnswers",
    "completeTasks",
    "failTasks",
    "releaseTasks",
    "extendLeases",
    "heartbeatTask",
    "assertLeaseHeld",
    "getTask",
    "findTaskState",
    "listTasks",
    "queueStats",
  ],
  /** An operator's writes (src/engine/store-writes.ts OperatorWrites) but `purgeTasks`, which deletes finished
   * tasks out of packs still holding live ones: left with retention (docs/design/packs.md, "Left"). */
  operator: ["cancelTask", "cancelQueueTasks", "retryTask", "redriveQueue"],
  /** A queue's stored config (the `queues` table, shared by both layouts). */
  queueConfig: [
    "getQueueConfig",
    "putQueueConfig",
    "storeQueueConfig",
    "readQueueRecord",
    "replaceQueueRecord",
    "listConfiguredQueues",
  ],
  /** The cron tick's reaper and retention prune (of the port's Upkeep: not yet `readLiveFront` and the
   * counter folds). */
  upkeep: ["reapLapsedLeases", "reapExpiredLeases", "pruneByRetention"],
} as const satisfies Record<string, ReadonlyArray<keyof TaskStore>>;

export type StoreGroup = keyof typeof STORE_GROUPS;

/** The operations the pack store implements. */
export type PackCore = Pick<TaskStore, (typeof STORE_GROUPS)[StoreGroup][number]>;

/**
 * The pack store (docs/design/packs.md): the core of the task-store port over `packs` (migration 0022),
 * many tasks per row. NOT SERVED: src/shards/shard-set.ts builds d1TaskStore; this store passes the
 * conformance files of its groups (test/engine, `needs`), and the rest of the port is still to build.
 *
 * @example
 * const store = packTaskStore(openDb(env.DB));
 * const { tasks } = await store.enqueueTasks("emails", [{ payload: { to: "a@example.com" } }], Date.now());
 */
export function packTaskStore(db: Db): PackCore {
  return {
    enqueueTasks: (queue, tasks, now, options) => enqueuePackTasks(db, queue, tasks, now, options),
    leaseTasks: (request, now) => leasePackTasks(db, request, now),
    leaseAnswers: (request, now) => leasePackAnswers(db, request, now),
    completeTasks: (items, now, scope) => completePackTasks(db, items, now, scope),
    failTasks: (items, now, scope) => failPackTasks(db, items, now, scope),
    releaseTasks: (items, now, scope) => releasePackTasks(db, items, now, scope),
    extendLeases: (items, now, scope) => extendPackLeases(db, items, now, scope),
    heartbeatTask: (request, now) => heartbeatPackTask(db, request, now),
    assertLeaseHeld: (id, token, now) => assertPackLeaseHeld(db, id, token, now),
    getTask: (id) => getPackTask(db, id),
    findTaskState: (id) => findPackTaskState(db, id),
    listTasks: (queue, filter) => listPackTasks(db, queue, filter),
    queueStats: (queue, scope, now) => packQueueStats(db, queue, scope, now),
    cancelTask: (id, now) => cancelPackTask(db, id, now),
    cancelQueueTasks: (queue, scope, now) => cancelPackQueueTasks(db, queue, scope, now),
    retryTask: (id, now) => retryPackTask(db, id, now),
    redriveQueue: (queue, scope, now) => redrivePackQueue(db, queue, scope, now),
    getQueueConfig: (queue) => getQueueConfig(db, queue),
    putQueueConfig: (queue, patch, now, processors, whyUnavailable) =>
      putQueueConfig(db, queue, patch, now, processors, whyUnavailable),
    storeQueueConfig: (queue, config, now) => storeQueueConfig(db, queue, config, now),
    readQueueRecord: (queue) => readQueueRecord(db, queue),
    replaceQueueRecord: (record) => replaceQueueRecord(db, record),
    listConfiguredQueues: () => listConfiguredQueues(db),
    reapLapsedLeases: (ids, now) => reapPackLapsedLeases(db, ids, now),
    reapExpiredLeases: (now, limit) => reapPackExpiredLeases(db, now, limit),
    pruneByRetention: (now) => prunePacksByRetention(db, now),
  };
}
