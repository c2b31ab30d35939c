import { sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { tasksHeldSql, transitHeldSql } from "../presence";
import { packsHeldSql } from "../packs/presence";
import { readPackTransitRow } from "../packs/transit-row";
import { d1TaskStore } from "../d1-store";
import { packTaskStore } from "../packs/pack-store";
import { getQueueConfig, type QueueConfig } from "../queue-config";
import { enqueuePackTasks } from "../packs/enqueue";
import type { EndedHandOut, TaskStore } from "../store";
import { couldBePackTask, inInputOrder, packTaskIds, splitItems } from "./layout-of-ids";
import { locateForWrite, type PackReads } from "../packs/locate";
import { leasedPacks } from "./leased-packs";
import type { HolderWriteHow } from "../packs/acks";
import {
  ackPackTasks,
  completePackTasks,
  extendPackLeases,
  failPackTasks,
  heartbeatPackTask,
  releasePackTasks,
} from "../packs/holder-writes";
import { packOf } from "../packs/pack-ids";
import type { AckOutcome, AckScope } from "../ack";
import { byQueue, joinFigures, joinFronts, mergePages, mergeStats, minOf, sumCounts } from "./merge-answers";
import { goesIntoPacks } from "./route-enqueue";
import { hintedLease, leaseBoth, unhintedLease, type LeaseSides, type RidingLease } from "./split-lease";
import { completeTasks as completeRowTasks } from "../complete";
import { ackThenLeaseInTurn } from "../ack-then-lease";
import type { BatchRider } from "../batch-rider";
import type { LeasedAnswer, StoredTask } from "../store";
import { AS_ANSWERS, AS_TASKS } from "../lease";
import { leasedAnswer, leasePackAnswers, leasePackTasks, packLeasePlan } from "../packs/lease";

/**
 * The store of one D1 database in both layouts (docs/design/packs.md, "Serving: rows and packs side by
 * side"): an enqueue call of plain tasks (`goesIntoPacks`) is kept in packs, every other in rows; a task stays
 * in the layout it was enqueued into for its whole life, so no task is ever in both. Operations by id go to
 * the layout holding each id (`packTaskIds`, one read of primary keys); operations over a queue ask both and
 * join the answers; what only rows keep (flow keys, dependencies, deadlines, uniqueness keys, the SQS
 * settings, a caller's batch) is the row store's alone. The queue records and the counters are one table
 * each, shared by both layouts: read once.
 *
 * A call that touches both layouts is one atomic step per layout, not one for the call: each item or task is
 * changed atomically and answered on its own, as the port promises for batch forms.
 */
export function hybridTaskStore(db: Db): TaskStore {
  let store = stores.get(db);
  if (store === undefined) stores.set(db, (store = openStore(db)));
  return store;
}

/** One store per Drizzle handle, as d1TaskStore's: a shard handed out per request builds no closures. */
const stores = new WeakMap<Db, TaskStore>();

function openStore(db: Db): TaskStore {
  const rows = d1TaskStore(db);
  const packs = packTaskStore(db);
  const side = { rows, packs };
  const leased = leasedPacks();

  /**
   * The pack write's first read of the ids a pack could have made (locate.ts `locateForWrite`), and which of
   * them are pack tasks (their pack exists: as `packTaskIds` answers); null when no id could be one.
   */
  async function heldInPacks(
    items: Array<{ id: string; leaseToken: string }>,
    now: number,
    scope: AckScope = {},
  ): Promise<{ preread: PackReads; onPacks: Set<string> } | null> {
    // Slots this isolate leased, their fences holding as it remembers them: no read (leased-packs.ts).
    const remembered = leased.reads(items, now, scope.queue);
    if (remembered) return { preread: remembered, onPacks: new Set(remembered.found.keys()) };
    const asked = [...new Set(items.map((i) => i.id).filter(couldBePackTask))];
    if (asked.length === 0) return null;
    const preread = await locateForWrite(db, asked);
    return { preread, onPacks: new Set(asked.filter((id) => preread.packIds.has(packOf(id)!.pack))) };
  }

  /**
   * A holder's write by item on each layout holding some of `items`, answered in input order. The read that
   * tells the layouts apart is the pack write's own first read (locate.ts `locateForWrite`: the packs, their
   * queues' configs), so a write of pack tasks makes two D1 calls: that read and its batch — one, the batch,
   * where this isolate leased them and remembers their packs (leased-packs.ts).
   */
  async function perHeldItem<T extends { id: string; leaseToken: string }>(
    items: T[],
    now: number,
    scope: AckScope | undefined,
    rowsRun: (items: T[]) => Promise<AckOutcome[]>,
    packsRun: (items: T[], preread: PackReads) => Promise<AckOutcome[]>,
  ): Promise<AckOutcome[]> {
    const held = await heldInPacks(items, now, scope);
    if (held === null || held.onPacks.size === 0) return rowsRun(items);
    const split = splitItems(items, held.onPacks);
    leased.written([...held.onPacks]);
    const [packAnswers, rowAnswers] = await Promise.all([
      packsRun(split.packs, held.preread),
      split.rows.length > 0 ? rowsRun(split.rows) : Promise.resolve([]),
    ]);
    return inInputOrder(split, { packs: packAnswers, rows: rowAnswers });
  }

  /** A holder's batch write (complete, fail, release, extend) over both layouts, as `perHeldItem` splits it. */
  function heldWrite<T extends { id: string; leaseToken: string }>(
    rowsWrite: (items: T[], now: number, scope?: AckScope) => Promise<AckOutcome[]>,
    packsWrite: (
      db: Db,
      items: T[],
      now: number,
      scope: AckScope | undefined,
      how: HolderWriteHow,
      preread: PackReads,
    ) => Promise<AckOutcome[]>,
  ) {
    return (items: T[], now: number, scope?: AckScope) =>
      perHeldItem(
        items,
        now,
        scope,
        (part) => rowsWrite(part, now, scope),
        (part, pre) => packsWrite(db, part, now, scope, "splice", pre),
      );
  }

  /** The layout holding task `id` (the row store when no pack does: it answers an unknown id). */
  async function holder(id: string) {
    return (await packTaskIds(db, [id])).has(id) ? packs : rows;
  }

  /** How each layout is leased at `now` (split-lease.ts), answered as tasks, or as the API renders them; what
   * a lease takes of packs is remembered for the holder's writes (leased-packs.ts). */
  const taskSides = (now: number): LeaseSides<StoredTask> => ({
    rows: AS_TASKS,
    packs: (r, config) => leasePackTasks(db, r, now, config, leased.remember),
    packsPlan: (r, config, guard) => packLeasePlan(db, r, now, config, guard, leased.remember),
  });
  const answerSides = (now: number): LeaseSides<LeasedAnswer> => ({
    rows: AS_ANSWERS,
    packs: (r, config) => leasePackAnswers(db, r, now, config, leased.remember),
    packsPlan: (r, config, guard) => {
      const plan = packLeasePlan(db, r, now, config, guard, leased.remember);
      return { statements: plan.statements, finish: async (results) => (await plan.finish(results)).map(leasedAnswer) };
    },
  });

  const store: TaskStore = {
    ...rows,

    // Tasks in, leases out.
    // The config read to decide is the pack store's for the call: read once.
    enqueueTasks: async (queue, tasks, now, options) => {
      let config: QueueConfig | undefined;
      const readConfig = async () => (config = await getQueueConfig(db, queue));
      return (await goesIntoPacks(tasks, readConfig))
        ? enqueuePackTasks(db, queue, tasks, now, options, config)
        : rows.enqueueTasks(queue, tasks, now, options);
    },
    leaseTasks: (request, now) => leaseBoth(db, request, now, taskSides(now)),
    leaseAnswers: (request, now) => leaseBoth(db, request, now, answerSides(now)),

    // The holder's fenced writes.
    completeTasks: heldWrite(rows.completeTasks, completePackTasks),
    // One D1 batch where it can (docs/design/packs.md, "An ack carrying the next lease in one call"): pack tasks
    // this isolate leased, on a queue whose packs came first here — the acks computed from memory, the hinted
    // lease riding their batch; or completions of tasks no pack could have made, on a queue whose packs did not
    // come first here — the row store's complete, the lease's first batch riding it. Anything else is the calls.
    ackThenLease: async (acks, request, now) => {
      const sides = answerSides(now);
      const scope = { queue: request.queue };
      const [complete, fail, release] = [acks.complete ?? [], acks.fail ?? [], acks.release ?? []];
      const all = [...complete, ...fail, ...release];
      /** The lease that rode `rider`'s batch; made on its own where the batch did not commit or it took nothing. */
      const ridden = async (rider: BatchRider, lease: RidingLease<LeasedAnswer>) =>
        (rider.results ? await lease.finish(rider.results) : null) ?? (await store.leaseAnswers(request, now));
      const hinted = hintedLease(db, request, now, sides);
      // Every item once over all kinds, its fence holding as remembered (leased-packs.ts answers null otherwise).
      const memory = hinted && leased.reads(all, now, request.queue);
      if (hinted && memory?.remembered) {
        const rider: BatchRider = { statements: hinted.statements };
        leased.written(all.map((i) => i.id));
        const reads = { ...memory, remembered: { ...memory.remembered, rider } };
        const outcomes = await ackPackTasks(db, { complete, fail, release }, now, scope, reads);
        return { outcomes, leased: await ridden(rider, hinted) };
      }
      const rowsOnly = complete.length > 0 && !complete.some((i) => couldBePackTask(i.id));
      if (!hinted && rowsOnly && fail.length === 0 && release.length === 0) {
        const first = unhintedLease(db, request, now, sides);
        const rider: BatchRider = { statements: first.statements };
        const outcomes = await completeRowTasks(db, complete, now, scope, rider);
        return { outcomes, leased: await ridden(rider, first) };
      }
      return ackThenLeaseInTurn(store, acks, request, now);
    },
    failTasks: heldWrite(rows.failTasks, failPackTasks),
    releaseTasks: heldWrite(rows.releaseTasks, releasePackTasks),
    extendLeases: heldWrite(rows.extendLeases, extendPackLeases),
    heartbeatTask: async (request, now) => {
      // As perHeldItem: the read that tells the layout is the pack heartbeat's own.
      const held = await heldInPacks([request], now);
      if (!held?.onPacks.has(request.id)) return rows.heartbeatTask(request, now);
      leased.written([request.id]);
      return heartbeatPackTask(db, request, now, "splice", held.preread);
    },
    assertLeaseHeld: async (id, token, now) => (await holder(id)).assertLeaseHeld(id, token, now),

    // A long poll's coordinator's hand-out writes.
    // Answered per task changed, not per item: each layout's answers, rows' first.
    returnUndelivered: async (items, now) => {
      const { rows: ofRows, packs: ofPacks } = splitItems(
        items,
        await packTaskIds(
          db,
          items.map((i) => i.id),
        ),
      );
      const a = ofRows.length > 0 ? await rows.returnUndelivered(ofRows, now) : [];
      const b = ofPacks.length > 0 ? await packs.returnUndelivered(ofPacks, now) : [];
      return [...a, ...b];
    },
    // At most `limit` in all: the layout of the first item first, the other for what it left.
    endClaimWindows: async (items, now, limit) => {
      const split = splitItems(
        items,
        await packTaskIds(
          db,
          items.map((i) => i.id),
        ),
      );
      const order = split.order[0]?.side === "packs" ? (["packs", "rows"] as const) : (["rows", "packs"] as const);
      const ended: EndedHandOut[] = [];
      for (const s of order) {
        const left: number | undefined = limit === undefined ? undefined : limit - ended.length;
        if (split[s].length === 0 || left === 0) continue;
        ended.push(...(await side[s].endClaimWindows(split[s], now, left)));
      }
      return ended;
    },

    // An operator's writes.
    cancelTask: async (id, now) => (await holder(id)).cancelTask(id, now),
    retryTask: async (id, now) => (await holder(id)).retryTask(id, now),
    cancelQueueTasks: async (queue, scope, now) => {
      const [a, b] = await Promise.all([
        rows.cancelQueueTasks(queue, scope, now),
        packs.cancelQueueTasks(queue, scope, now),
      ]);
      return {
        cancelled: a.cancelled + b.cancelled,
        cancel_requested: a.cancel_requested + b.cancel_requested,
        ids: [...a.ids, ...b.ids],
        freesFlowKey: a.freesFlowKey || b.freesFlowKey,
      };
    },
    redriveQueue: async (queue, scope, now) => {
      const a = await rows.redriveQueue(queue, scope, now);
      const left = scope.limit === undefined ? undefined : scope.limit - a.redriven;
      if (left !== undefined && left <= 0) return a;
      const b = await packs.redriveQueue(queue, { ...scope, limit: left }, now);
      return { redriven: a.redriven + b.redriven, ids: [...a.ids, ...b.ids] };
    },
    purgeTasks: async (queue, options) => {
      const a = await rows.purgeTasks(queue, options);
      const left = options.limit === undefined ? undefined : options.limit - a.purged;
      if (left !== undefined && left <= 0) return a;
      const b = await packs.purgeTasks(queue, { ...options, limit: left });
      return { purged: a.purged + b.purged };
    },
    countForBulk: async (queue, action, filter, cap) => {
      const [a, b] = await Promise.all([
        rows.countForBulk(queue, action, filter, cap),
        packs.countForBulk(queue, action, filter, cap),
      ]);
      return a + b;
    },
    applyBulk: async (queue, action, filter, cap, now) => {
      const a = await rows.applyBulk(queue, action, filter, cap, now);
      if (a.count >= cap) return { ...a, more: true };
      const b = await packs.applyBulk(queue, action, filter, cap - a.count, now);
      return {
        count: a.count + b.count,
        ids: [...a.ids, ...b.ids],
        more: a.more || b.more,
        freesFlowKey: a.freesFlowKey || b.freesFlowKey,
      };
    },

    // Reads.
    getTask: async (id) => (await holder(id)).getTask(id),
    findTaskState: async (id) => (await holder(id)).findTaskState(id),
    readTaskEventFields: async (ids) => {
      const [a, b] = await Promise.all([rows.readTaskEventFields(ids), packs.readTaskEventFields(ids)]);
      return [...a, ...b];
    },
    listTasks: async (queue, filter) => {
      const [a, b] = await Promise.all([rows.listTasks(queue, filter), packs.listTasks(queue, filter)]);
      return mergePages(a, b, filter.limit);
    },
    queueStats: async (queue, scope, now) => {
      const [a, b] = await Promise.all([rows.queueStats(queue, scope, now), packs.queueStats(queue, scope, now)]);
      return mergeStats(a, b);
    },
    listQueues: async () => {
      const [a, b] = await Promise.all([rows.listQueues(), packs.listQueues()]);
      return byQueue(a, b, (x, y) => ({ queue: x.queue, counts: sumCounts(x.counts, y.counts) })).sort((x, y) =>
        x.queue < y.queue ? -1 : 1,
      );
    },
    nextRunAt: async (queue, now, opts) => {
      const [a, b] = await Promise.all([rows.nextRunAt(queue, now, opts), packs.nextRunAt(queue, now, opts)]);
      return minOf(a, b);
    },
    sessionLeases: async (queue, session, now) => {
      const [a, b] = await Promise.all([
        rows.sessionLeases(queue, session, now),
        packs.sessionLeases(queue, session, now),
      ]);
      return [...a, ...b];
    },
    countLiveTasks: async (queue, now) => {
      const [a, b] = await Promise.all([rows.countLiveTasks(queue, now), packs.countLiveTasks(queue, now)]);
      return { due: a.due + b.due, notDue: a.notDue + b.notDue, processing: a.processing + b.processing };
    },
    liveFigures: async (now, queue) => {
      const [a, b] = await Promise.all([rows.liveFigures(now, queue), packs.liveFigures(now, queue)]);
      return byQueue(a, b, joinFigures);
    },

    // What this database holds.
    hasQueueData: async (queue) => (await rows.hasQueueData(queue)) || (await packs.hasQueueData(queue)),
    hasUncancelledLiveTask: async (queue) =>
      (await rows.hasUncancelledLiveTask(queue)) || (await packs.hasUncancelledLiveTask(queue)),
    findQueuesWithLiveTasks: async (queues) => {
      const [a, b] = await Promise.all([rows.findQueuesWithLiveTasks(queues), packs.findQueuesWithLiveTasks(queues)]);
      return [...new Set([...a, ...b])];
    },
    findTaskIdsHeld: async (ids) => {
      const [a, b] = await Promise.all([rows.findTaskIdsHeld(ids), packs.findTaskIdsHeld(ids)]);
      return [...new Set([...a, ...b])];
    },
    // One statement: counted apart, a take-out between the two reads would be missed by both.
    countQueueTasksHeld: async (queue, partition) =>
      (
        await db.get<{ n: number }>(
          sql`SELECT (${tasksHeldSql(queue, partition)}) + (${packsHeldSql(queue, partition)})
            + (${transitHeldSql(queue, partition)}) AS n`,
        )
      )?.n ?? 0,
    listQueueNamesInUse: async () => {
      const [a, b] = await Promise.all([rows.listQueueNamesInUse(), packs.listQueueNamesInUse()]);
      return [...new Set([...a, ...b])];
    },

    // Dependencies: a dependent is always a row (route-enqueue.ts), and the edge tables are one for both
    // layouts; a dependency may be a pack task — asked of the layout that holds it.
    listDependents: async (id, page) => (await holder(id)).listDependents(id, page),
    recordRemoteEdges: async (edges, now) => {
      const onPacks = await packTaskIds(
        db,
        edges.map((e) => e.dependency),
      );
      const [a, b] = await Promise.all([
        rows.recordRemoteEdges(
          edges.filter((e) => !onPacks.has(e.dependency)),
          now,
        ),
        packs.recordRemoteEdges(
          edges.filter((e) => onPacks.has(e.dependency)),
          now,
        ),
      ]);
      return new Map([...a, ...b]);
    },

    // Transit to and from other databases: `task_transit` is one table for both layouts, so its reads and its
    // clear are the row store's alone; a take-out takes from both, a put-in hands each row to the layout whose
    // record it is (a pack's carries a `pack` key: src/engine/packs/transit-row.ts).
    takeOutForTransit: async (selection, to, limit, now) => {
      const taken = await rows.takeOutForTransit(selection, to, limit, now);
      return taken >= limit ? taken : taken + (await packs.takeOutForTransit(selection, to, limit - taken, now));
    },
    putInFromTransit: async (delivered) => {
      const ofPacks = delivered.filter((row) => readPackTransitRow(row.row) !== null);
      const ofRows = delivered.filter((row) => readPackTransitRow(row.row) === null);
      // Each layout's put-in is all or none and a repeat writes nothing, so a crash between the two is made
      // good by the relay's next delivery of the same rows.
      if (ofRows.length > 0) await rows.putInFromTransit(ofRows);
      if (ofPacks.length > 0) await packs.putInFromTransit(ofPacks);
    },

    // The cron tick.
    readLiveFront: async (now, opts) => {
      const [a, b] = await Promise.all([rows.readLiveFront(now, opts), packs.readLiveFront(now, opts)]);
      return byQueue(a, b, joinFronts);
    },
    reapLapsedLeases: async (ids, now) => {
      const onPacks = await packTaskIds(db, ids);
      const [a, b] = await Promise.all([
        rows.reapLapsedLeases(
          ids.filter((id) => !onPacks.has(id)),
          now,
        ),
        onPacks.size > 0 ? packs.reapLapsedLeases([...onPacks], now) : { reaped: [], unclaimed: [] },
      ]);
      return { reaped: [...a.reaped, ...b.reaped], unclaimed: [...a.unclaimed, ...b.unclaimed] };
    },
    reapExpiredLeases: async (now, limit) => {
      const a = await rows.reapExpiredLeases(now, limit);
      const b = await packs.reapExpiredLeases(now, limit);
      return { reaped: [...a.reaped, ...b.reaped], unclaimed: [...a.unclaimed, ...b.unclaimed] };
    },
    pruneByRetention: async (now) => {
      const a = await rows.pruneByRetention(now);
      const b = await packs.pruneByRetention(now);
      return { pruned: a.pruned + b.pruned, windows: a.windows + b.windows };
    },
  };
  return store;
}
