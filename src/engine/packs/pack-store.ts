import { ackThenLeaseInTurn } from "../ack-then-lease";
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
import { foldOldCounters, recentCounts, sumCounters } from "../counters";
import { throughputSeries } from "../throughput";
import { foldPackCountersInRows } from "./counter-folds";
import { applyPackBulk, countPackBulk } from "./bulk";
import { enqueuePackTasks } from "./enqueue";
import {
  assertPackLeaseHeld,
  completePackTasks,
  extendPackLeases,
  failPackTasks,
  heartbeatPackTask,
  releasePackTasks,
} from "./holder-writes";
import { endPackClaimWindows, returnPackUndelivered } from "./hand-out";
import { leasePackAnswers, leasePackTasks } from "./lease";
import { cancelPackQueueTasks, cancelPackTask, redrivePackQueue, retryPackTask } from "./operator-writes";
import { listPackTasks } from "./listing";
import { readPackLiveFront } from "./live-front";
import { countPackLiveTasks, packLiveFigures, packNextRunAt } from "./live-reads";
import { listPackQueues, packQueueStats } from "./queue-reads";
import { findPackTaskState, getPackTask, readPackTaskEventFields } from "./reads";
import { purgePackTasks } from "./purge";
import { prunePacksByRetention } from "./retention";
import { reapPackExpiredLeases, reapPackLapsedLeases } from "./upkeep";
import { deleteQueueRecord } from "../sqs-settings";
import { clearTransit, findInTransit, isInTransit, listTransit } from "../transit";
import {
  countPackQueueTasksHeld,
  findPackQueuesWithLiveTasks,
  findPackTaskIdsHeld,
  hasPackQueueData,
  hasPackUncancelledLiveTask,
  listPackQueueNamesInUse,
} from "./presence";
import { putInPackTasks } from "./transit-in";
import { takeOutPackTasks } from "./transit-out";
import { dropSettlements, owedSettlements } from "../remote-dependencies";
import {
  listPackDependencies,
  listPackDependents,
  listPackRemoteWaits,
  packSettledDependents,
  recordPackRemoteEdges,
  refusePackFanOut,
  settlePackRemoteWait,
} from "./dependency-targets";
import { readPackSessionLeases } from "./session-leases";

/** The groups of the task-store port (src/engine/store.ts), by name: what a store implements, and what a
 * conformance file needs (test/engine/conformance/store-kinds.ts). */
export const STORE_GROUPS = {
  /** Tasks in, leases out, the holder's fenced writes, reads by id. */
  core: [
    "enqueueTasks",
    "leaseTasks",
    "leaseAnswers",
    "completeTasks",
    "ackThenLease",
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
  /** An operator's writes (src/engine/store-writes.ts OperatorWrites) but `purgeTasks` (group `purge`). */
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
  /** The cron tick's reaper and retention prune (the rest of the port's Upkeep: `liveFront`, `counterFolds`). */
  upkeep: ["reapLapsedLeases", "reapExpiredLeases", "pruneByRetention"],
  /** The rest of TaskReads but `collectCompletedResults`: event fields, queues, live counts and figures, the
   * next run time (src/engine/packs/queue-reads.ts, live-reads.ts). */
  reads: ["readTaskEventFields", "listQueues", "nextRunAt", "countLiveTasks", "liveFigures"],
  /** CounterReads: the per-minute counters, the table shared with the D1 store (src/engine/counters.ts). */
  counters: ["sumCounters", "recentCounts", "throughputSeries"],
  /** The cron tick's walk of the live front (src/engine/packs/live-front.ts). */
  liveFront: ["readLiveFront"],
  /** The counter folds of Upkeep (src/engine/packs/counter-folds.ts: packs keep no events to fold). */
  counterFolds: ["foldOldCounters", "foldCountersInRows"],
  /** What the store holds of a queue (src/engine/store-shards.ts Presence), and deleting a queue's record. */
  presence: [
    "deleteQueueRecord",
    "hasQueueData",
    "findQueuesWithLiveTasks",
    "findTaskIdsHeld",
    "countQueueTasksHeld",
    "hasUncancelledLiveTask",
    "listQueueNamesInUse",
  ],
  /** Queue moves between stores (src/engine/store-shards.ts Transit): tasks taken out of their packs, put in
   * on the destination in packs of the same ids (transit-out.ts, transit-in.ts). */
  transit: ["takeOutForTransit", "listTransit", "putInFromTransit", "clearTransit", "isInTransit", "findInTransit"],
  /** A long poll's coordinator's returns and claim-window ends of its provisional leases (HandOutWrites). */
  handOut: ["returnUndelivered", "endClaimWindows"],
  /** An operator's purge of finished tasks, out of packs that may still hold live ones (purge.ts). */
  purge: ["purgeTasks"],
  /** An operator's actions on the tasks a filter matches (BulkWrites: bulk.ts). */
  bulk: ["countForBulk", "applyBulk"],
  /** Dependencies (src/engine/store-dependencies.ts), a pack task as a TARGET: row tasks that depend on it
   * are settled by whatever finishes it, and listed. Row-only by nature, answered as such (a pack task never
   * waits): `enqueueFanOut` is refused `invalid_request`, a pack task's dependencies are none. */
  dependencies: ["enqueueFanOut", "listDependencies", "listDependents", "settledDependents"],
  /** Dependencies across stores (store-remote-dependencies.ts): a pack task's outbox of dependents elsewhere.
   * Row-only by nature: `settleRemoteWait` (no dependent here: `not_found`), `listRemoteWaits` (none). */
  remoteDependencies: [
    "recordRemoteEdges",
    "owedSettlements",
    "dropSettlements",
    "settleRemoteWait",
    "listRemoteWaits",
  ],
  /** The leases a worker session holds (store-sessions.ts): slots whose lease entry names it (session-leases.ts). */
  sessions: ["sessionLeases"],
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
  const store: PackCore = {
    enqueueTasks: (queue, tasks, now, options) => enqueuePackTasks(db, queue, tasks, now, options),
    leaseTasks: (request, now) => leasePackTasks(db, request, now),
    leaseAnswers: (request, now) => leasePackAnswers(db, request, now),
    completeTasks: (items, now, scope) => completePackTasks(db, items, now, scope),
    ackThenLease: (acks, request, now) => ackThenLeaseInTurn(store, acks, request, now),
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
    readTaskEventFields: (ids) => readPackTaskEventFields(db, ids),
    listQueues: () => listPackQueues(db),
    nextRunAt: (queue, now, opts) => packNextRunAt(db, queue, now, opts),
    countLiveTasks: (queue, now) => countPackLiveTasks(db, queue, now),
    liveFigures: (now, queue) => packLiveFigures(db, now, queue),
    sumCounters: (opts) => sumCounters(db, opts),
    recentCounts: (now, queue) => recentCounts(db, now, queue),
    throughputSeries: (queue, since, now) => throughputSeries(db, queue, since, now),
    readLiveFront: (now, opts) => readPackLiveFront(db, now, opts),
    foldOldCounters: (now) => foldOldCounters(db, now),
    foldCountersInRows: () => foldPackCountersInRows(),
    deleteQueueRecord: (queue) => deleteQueueRecord(db, queue),
    hasQueueData: (queue) => hasPackQueueData(db, queue),
    findQueuesWithLiveTasks: (queues) => findPackQueuesWithLiveTasks(db, queues),
    findTaskIdsHeld: (ids) => findPackTaskIdsHeld(db, ids),
    countQueueTasksHeld: (queue, partition) => countPackQueueTasksHeld(db, queue, partition),
    hasUncancelledLiveTask: (queue) => hasPackUncancelledLiveTask(db, queue),
    listQueueNamesInUse: () => listPackQueueNamesInUse(db),
    // `task_transit` is shared with the row store: its reads and its clear are the same statements.
    takeOutForTransit: (selection, to, limit, now) => takeOutPackTasks(db, selection, to, limit, now),
    listTransit: (limit) => listTransit(db, limit),
    putInFromTransit: (rows) => putInPackTasks(db, rows),
    clearTransit: (ids) => clearTransit(db, ids),
    isInTransit: (id) => isInTransit(db, id),
    findInTransit: (ids) => findInTransit(db, ids),
    returnUndelivered: (items, now) => returnPackUndelivered(db, items, now),
    endClaimWindows: (items, now, limit) => endPackClaimWindows(db, items, now, limit),
    purgeTasks: (queue, options) => purgePackTasks(db, queue, options),
    countForBulk: (queue, action, filter, cap) => countPackBulk(db, queue, action, filter, cap),
    applyBulk: (queue, action, filter, cap, now) => applyPackBulk(db, queue, action, filter, cap, now),
    enqueueFanOut: () => refusePackFanOut(),
    listDependencies: (id) => listPackDependencies(db, id),
    listDependents: (id, page) => listPackDependents(db, id, page),
    settledDependents: (ids, now) => packSettledDependents(db, ids, now),
    recordRemoteEdges: (edges, now) => recordPackRemoteEdges(db, edges, now),
    owedSettlements: (limit) => owedSettlements(db, limit),
    dropSettlements: (edges, now) => dropSettlements(db, edges, now),
    settleRemoteWait: (settlement) => settlePackRemoteWait(settlement),
    listRemoteWaits: () => listPackRemoteWaits(),
    sessionLeases: (queue, session, now) => readPackSessionLeases(db, queue, session, now),
  };
  return store;
}
