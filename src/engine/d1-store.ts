import { prepare, type Db } from "../db/client";
import { applyBulk, countForBulk } from "./bulk";
import { cancelQueueTasks, cancelTask } from "./cancel";
import { completeTasks } from "./complete";
import { collectCompletedResults } from "./completed-results";
import { foldOldCounters, recentCounts, sumCounters } from "./counters";
import { foldCountersInRows } from "./counters-in-row";
import { readSettledDependents } from "./dependencies";
import { listDependencies, listDependents } from "./dependency-reads";
import { enqueueTasks } from "./enqueue";
import { enqueueStatements } from "./enqueue-statements";
import {
  dropSettlements,
  listRemoteWaits,
  owedSettlements,
  recordRemoteEdges,
  settleRemoteWait,
} from "./remote-dependencies";
import { enqueueFanOut } from "./fan-out";
import { extendLeases } from "./extend";
import { expireOverdueTasks } from "./expire";
import { pruneExpiredKeys } from "./unique-keys";
import { failTasks } from "./fail";
import { readQueueFlow, setFlowPaused } from "./flow-control";
import { pruneIdleFlowKeys } from "./flow-prune";
import { flowFigures } from "./flow-figures";
import { advanceStarvedKeys, starvedKeys } from "./flow-starved";
import { heartbeatTask } from "./heartbeat";
import { endClaimWindows } from "./end-claim-windows";
import { leaseAnswers, leaseTasks, nextRunAt } from "./lease";
import { ackThenLeaseInTurn } from "./ack-then-lease";
import { assertLeaseHeld } from "./lease-check";
import { countLiveTasks, liveFigures } from "./live-figures";
import { readLiveFront } from "./live-front";
import {
  countQueueTasksHeld,
  findQueuesWithLiveTasks,
  findTaskIdsHeld,
  hasQueueData,
  hasUncancelledLiveTask,
  listQueueNamesInUse,
} from "./presence";
import { pruneByRetention, purgeTasks } from "./purge";
import {
  getQueueConfig,
  listConfiguredQueues,
  putQueueConfig,
  readQueueRecord,
  replaceQueueRecord,
  storeQueueConfig,
} from "./queue-config";
import { findTaskState, getTask, listQueues, listTasks, queueStats, readTaskEventFields } from "./read";
import { reapExpiredLeases, reapLapsedLeases } from "./reap";
import { readSessionLeases } from "./session-leases";
import { redriveQueue, retryTask } from "./redrive";
import { releaseTasks } from "./release";
import { returnUndelivered } from "./return-undelivered";
import type { TaskStore } from "./store";
import { throughputSeries } from "./throughput";
import { addQueueTags, deleteQueueRecord, removeQueueTags, setSqsSettings } from "./sqs-settings";
import { clearTransit, findInTransit, isInTransit, listTransit, putInFromTransit, takeOutForTransit } from "./transit";

/** One store per Drizzle handle (handles are made once per D1 binding object: src/db/client.ts), so a
 * shard handed out per request builds no closures. */
const stores = new WeakMap<Db, TaskStore>();

/**
 * The task store of one D1 database: one row per task (src/db/schema.ts), each operation the engine function
 * of the same name (src/engine/*.ts), which documents its statements and what they cost.
 *
 * @example
 * const store = d1TaskStore(openDb(env.DB));
 * const [task] = await store.leaseTasks({ queue: "emails", max: 1, visibilityTimeoutS: 30, holder: "w1" }, Date.now());
 */
export function d1TaskStore(db: Db): TaskStore {
  let store = stores.get(db);
  if (store === undefined) stores.set(db, (store = openStore(db)));
  return store;
}

function openStore(db: Db): TaskStore {
  const store: TaskStore = {
    // Tasks in, leases out.
    enqueueTasks: (queue, tasks, now, options) => enqueueTasks(db, queue, tasks, now, options),
    leaseTasks: (request, now) => leaseTasks(db, request, now),
    leaseAnswers: (request, now) => leaseAnswers(db, request, now),
    // The holder's fenced writes.
    completeTasks: (items, now, scope) => completeTasks(db, items, now, scope),
    ackThenLease: (acks, request, now) => ackThenLeaseInTurn(store, acks, request, now),
    failTasks: (items, now, scope) => failTasks(db, items, now, scope),
    releaseTasks: (items, now, scope) => releaseTasks(db, items, now, scope),
    extendLeases: (items, now, scope) => extendLeases(db, items, now, scope),
    heartbeatTask: (request, now) => heartbeatTask(db, request, now),
    assertLeaseHeld: (id, leaseToken, now) => assertLeaseHeld(db, id, leaseToken, now),
    // A long poll's coordinator's hand-out writes: returnUndelivered, endClaimWindows.
    returnUndelivered: (items, now) => returnUndelivered(db, items, now),
    endClaimWindows: (items, now, limit) => endClaimWindows(db, items, now, limit),
    // An operator's writes.
    cancelTask: (id, now) => cancelTask(db, id, now),
    cancelQueueTasks: async (queue, scope, now) => {
      const ids: string[] = [];
      const counts = await cancelQueueTasks(db, queue, scope, now, ids);
      return { ...counts, ids };
    },
    retryTask: (id, now) => retryTask(db, id, now),
    redriveQueue: (queue, scope, now) => redriveQueue(db, queue, scope, now),
    purgeTasks: (queue, options) => purgeTasks(db, queue, options),
    // An operator's actions by filter.
    countForBulk: (queue, action, filter, cap) => countForBulk(db, queue, action, filter, cap),
    applyBulk: (queue, action, filter, cap, now) => applyBulk(db, queue, action, filter, cap, now),
    // Reads.
    getTask: (id) => getTask(db, id),
    findTaskState: (id) => findTaskState(db, id),
    readTaskEventFields: (ids) => readTaskEventFields(db, ids),
    listTasks: (queue, filter) => listTasks(db, queue, filter),
    queueStats: (queue, scope, now) => queueStats(db, queue, scope, now),
    listQueues: () => listQueues(db),
    nextRunAt: (queue, now, opts) => nextRunAt(db, queue, now, opts),
    sessionLeases: (queue, session, now) => readSessionLeases(db, queue, session, now),
    collectCompletedResults: (scope, limit, pick) => collectCompletedResults(db, scope, limit, pick),
    countLiveTasks: (queue, now) => countLiveTasks(db, queue, now),
    liveFigures: (now, queue) => liveFigures(db, now, queue),
    sumCounters: (opts) => sumCounters(db, opts),
    recentCounts: (now, queue) => recentCounts(db, now, queue),
    throughputSeries: (queue, since, now) => throughputSeries(db, queue, since, now),
    // Queue configs and records.
    getQueueConfig: (queue) => getQueueConfig(db, queue),
    putQueueConfig: (queue, patch, now, processors, whyUnavailable) =>
      putQueueConfig(db, queue, patch, now, processors, whyUnavailable),
    storeQueueConfig: (queue, config, now) => storeQueueConfig(db, queue, config, now),
    readQueueRecord: (queue) => readQueueRecord(db, queue),
    replaceQueueRecord: (record) => replaceQueueRecord(db, record),
    listConfiguredQueues: () => listConfiguredQueues(db),
    deleteQueueRecord: (queue) => deleteQueueRecord(db, queue),
    // What this database holds.
    hasQueueData: (queue) => hasQueueData(db, queue),
    findQueuesWithLiveTasks: (queues) => findQueuesWithLiveTasks(db, queues),
    findTaskIdsHeld: (ids) => findTaskIdsHeld(db, ids),
    countQueueTasksHeld: (queue, partition) => countQueueTasksHeld(db, queue, partition),
    hasUncancelledLiveTask: (queue) => hasUncancelledLiveTask(db, queue),
    listQueueNamesInUse: () => listQueueNamesInUse(db),
    // Transit to and from other databases.
    takeOutForTransit: (selection, to, limit, now) => takeOutForTransit(db, selection, to, limit, now),
    listTransit: (limit) => listTransit(db, limit),
    putInFromTransit: (rows) => putInFromTransit(db, rows),
    clearTransit: (ids) => clearTransit(db, ids),
    isInTransit: (id) => isInTransit(db, id),
    findInTransit: (ids) => findInTransit(db, ids),
    // The cron tick.
    readLiveFront: (now, opts) => readLiveFront(db, now, opts),
    reapLapsedLeases: (ids, now) => reapLapsedLeases(db, ids, now),
    reapExpiredLeases: (now, limit) => reapExpiredLeases(db, now, limit),
    pruneByRetention: (now) => pruneByRetention(db, now),
    foldOldCounters: (now) => foldOldCounters(db, now),
    foldCountersInRows: (now) => foldCountersInRows(db, now),
    // Flow control by key.
    setFlowPaused: (queue, key, paused, now) => setFlowPaused(db, queue, key, paused, now),
    readQueueFlow: (queue, limit, now) => readQueueFlow(db, queue, limit, now),
    pruneIdleFlowKeys: (now) => pruneIdleFlowKeys(db, now),
    flowFigures: (now, top) => flowFigures(db, now, top),
    starvedKeys: (now, queue) => starvedKeys(db, now, queue),
    advanceStarvedKeys: (now) => advanceStarvedKeys(db, now),
    // Dependencies.
    enqueueFanOut: (queue, children, join, now, field) => enqueueFanOut(db, queue, children, join, now, field),
    listDependencies: (id, page) => listDependencies(db, id, page),
    listDependents: (id, page) => listDependents(db, id, page),
    settledDependents: (ids, now) => readSettledDependents(db, ids, now),
    // Dependencies across stores.
    recordRemoteEdges: (edges, now) => recordRemoteEdges(db, edges, now),
    owedSettlements: (limit) => owedSettlements(db, limit),
    dropSettlements: (edges, now) => dropSettlements(db, edges, now),
    settleRemoteWait: (settlement, now) => settleRemoteWait(db, settlement, now),
    listRemoteWaits: (dependent) => listRemoteWaits(db, dependent),
    // Start deadlines and keys.
    expireOverdueTasks: (now, limit) => expireOverdueTasks(db, now, limit),
    pruneExpiredKeys: (now) => pruneExpiredKeys(db, now),
    // The SQS endpoint's settings of a queue.
    setSqsSettings: (queue, settings) => setSqsSettings(db, queue, settings),
    addQueueTags: (queue, tags, max, now) => addQueueTags(db, queue, tags, max, now),
    removeQueueTags: (queue, keys) => removeQueueTags(db, queue, keys),
    // Enqueues in a caller's own batch.
    prepareEnqueue: (queue, tasks, now, field) => {
      const prepared = enqueueStatements(queue, tasks, now, field);
      return { ...prepared, statements: prepared.statements.map((statement) => prepare(db, statement)) };
    },
  };
  return store;
}
