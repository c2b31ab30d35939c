import type { StoredTask } from "../contracts/stored-task";
import type { Env } from "../env";
import { tasksField } from "../contracts/task-field";
import type {
  EnqueueOptions,
  EnqueueOutcome,
  EnqueueResult,
  FencedItem,
  LeaseRequest,
  ListFilter,
  NewTask,
  PurgeOptions,
  QueueStats,
  RedriveScope,
  ReturnedTask,
  SettledDependent,
  TaskStore,
} from "../engine/store";
import type { LeaseOrdered } from "../contracts/lease-order";
import { leaseFromPartitions, leaseStoredTasks, type LeaseOn } from "./partitioned-lease";
import { nextLeaseOffset, pickPart, routeShards, type PartRoute, type QueueRoute } from "./queue-route";
import { shardNames, type Shard } from "./shard-set";
import { placeClientIds } from "./client-id-addresses";
import { placeRemoteDependencies } from "./remote-dependencies";
import { carriesSlot, slotIdFactory } from "./task-slot";

const slotId = slotIdFactory();

/**
 * Enqueues onto the queue's partitions: each task joins a part (pickPart) and gets an id carrying that
 * part's slot; each shard's share is one enqueueTasks call, the shards in parallel. So an unpartitioned
 * queue's enqueue keeps the engine's guarantee (all or nothing up to 1,000 tasks, then in order, 1,000 at
 * a time: src/engine/enqueue.ts), and a partitioned queue's holds per partition.
 *
 * A client's own id carries no slot: on a deployment with several shards its address is recorded first
 * (task_addresses, one row on the home database). An id recorded before sends the task to that id's
 * partition, where the engine finds it and answers `deduplicated` as on one database; an id of another
 * queue refuses the call before anything is inserted (src/shards/client-id-addresses.ts).
 *
 * `options` go to each shard's call, its tasks' fields named by their place in `input`; `checkedFor` guards
 * each shard's first insert (so a route of one shard stores nothing unchecked; over several, a shard that
 * passed keeps its tasks: callers read the processing first there, `enqueueChecked`).
 */
export async function enqueueToQueue(
  env: Env,
  route: QueueRoute,
  input: NewTask[],
  now: number,
  options: EnqueueOptions = {},
): Promise<EnqueueResult & { parts: number[]; remoteDependencies?: boolean }> {
  const field = options.field ?? tasksField;
  const parts = input.map((task) => pickPart(route, task));
  // An id is made here only where it is needed before the insert: a dependent's, for its edges on other
  // shards. The store makes every other (`newId` below), carrying its partition's slot as these do.
  const ids = input.map((task, i) => task.id ?? (task.dependsOn?.length ? slotId(parts[i]!.slot, now) : undefined));
  if (shardNames(env).length > 1) await placeClientIds(env, route, input, ids, parts, now);
  // Dependencies on other shards: found there and their edges written first (src/shards/remote-dependencies.ts).
  if (shardNames(env).length > 1)
    input = await placeRemoteDependencies(env, route.queue, input, ids, parts, field, now);
  // One call per partition: the ids the store makes carry that partition's slot.
  const byPart = new Map<number, { part: PartRoute; items: Array<{ i: number; task: NewTask }> }>();
  input.forEach((task, i) => {
    const part = parts[i]!;
    const group = byPart.get(part.part) ?? { part, items: [] };
    const id = ids[i];
    // A client's id carries no slot: the row names its partition (what a move of it selects by).
    const slot = id === undefined || carriesSlot(id, part.slot) ? undefined : part.slot;
    group.items.push({ i, task: { ...task, id, slot } });
    byPart.set(part.part, group);
  });
  const outcomes = new Array<EnqueueOutcome>(input.length);
  let earliestRunAt: number | null = null;
  await Promise.all(
    [...byPart.values()].map(async ({ part, items }) => {
      const result = await part.shard.store.enqueueTasks(
        route.queue,
        items.map((item) => item.task),
        now,
        { ...options, field: (k, name) => field(items[k]!.i, name), newId: (at) => slotId(part.slot, at) },
      );
      result.tasks.forEach((outcome, k) => (outcomes[items[k]!.i] = outcome));
      if (result.earliestRunAt !== null) earliestRunAt = Math.min(earliestRunAt ?? Infinity, result.earliestRunAt);
    }),
  );
  // The partitions that received tasks: only their coordinators need waking.
  const written = [...new Set(parts.filter((_, i) => outcomes[i] && !outcomes[i]!.deduplicated).map((p) => p.part))];
  const remote = input.some((task) => task.remoteDependencies !== undefined);
  return { tasks: outcomes, earliestRunAt, parts: written, ...(remote ? { remoteDependencies: true } : {}) };
}

/**
 * Leases from the queue's partitions (and a shard it is moving from): from partition `startPart`'s shard
 * first when given (a partition's coordinator), else from a rotating offset. `lease` is one database's
 * lease: `leaseTasks` (rows, the default) or `leaseAnswers` (views rendered by SQLite, the HTTP lease).
 */
export function leaseFromQueue(
  route: QueueRoute,
  request: Omit<LeaseRequest, "queue">,
  now: number,
  startPart?: number,
): Promise<StoredTask[]>;
export function leaseFromQueue<T extends LeaseOrdered>(
  route: QueueRoute,
  request: Omit<LeaseRequest, "queue">,
  now: number,
  startPart: number | undefined,
  lease: LeaseOn<T>,
): Promise<T[]>;
export function leaseFromQueue(
  route: QueueRoute,
  request: Omit<LeaseRequest, "queue">,
  now: number,
  startPart?: number,
  lease: LeaseOn<LeaseOrdered> = leaseStoredTasks,
): Promise<LeaseOrdered[]> {
  const shards = routeShards(route);
  const own = startPart === undefined ? -1 : shards.findIndex((s) => s.name === route.parts[startPart]?.shard.name);
  const start = own >= 0 ? own : nextLeaseOffset(shards.length);
  return leaseFromPartitions(
    shards.map((s) => s.store),
    route.queue,
    request,
    start,
    now,
    lease,
  );
}

/**
 * Returns undelivered provisional leases of the queue to pending (returnUndelivered) on every shard it spans: the
 * statement matches a task by id and token, so only the shard holding it changes anything, and a coordinator
 * that handed tasks out from several partitions need not know which shard each came from (a rare call:
 * a withdrawn poll, or a hand-out left unclaimed while others wait).
 *
 * @example
 * const returned = await returnUndeliveredOnQueue(route, [{ id, leaseToken }], Date.now());
 */
export async function returnUndeliveredOnQueue(
  route: QueueRoute,
  items: FencedItem[],
  now: number,
): Promise<ReturnedTask[]> {
  if (items.length === 0) return [];
  const all = await Promise.all(routeShards(route).map((s) => s.store.returnUndelivered(items, now)));
  return all.flat();
}

/** Counts and due work over every shard holding the queue. */
export async function queueStatsOf(route: QueueRoute, scope: { group?: string }, now: number): Promise<QueueStats> {
  const all = await Promise.all(routeShards(route).map((s) => s.store.queueStats(route.queue, scope, now)));
  const total = all[0]!;
  for (const more of all.slice(1)) {
    for (const state of Object.keys(total.counts) as Array<keyof QueueStats["counts"]>) {
      total.counts[state] += more.counts[state];
    }
    total.due += more.due;
    if (more.oldest_due_at !== null)
      total.oldest_due_at = Math.min(total.oldest_due_at ?? Infinity, more.oldest_due_at);
  }
  return total;
}

/** A page of the queue's tasks in id order, merged over its shards (each asked for one page). */
export async function listTasksOf(
  route: QueueRoute,
  filter: ListFilter,
): Promise<{ tasks: StoredTask[]; next_cursor: string | null }> {
  const shards = routeShards(route);
  if (shards.length === 1) return shards[0]!.store.listTasks(route.queue, filter);
  const pages = await Promise.all(shards.map((s) => s.store.listTasks(route.queue, filter)));
  const merged = pages.flatMap((p) => p.tasks).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const page = merged.slice(0, filter.limit);
  const more = merged.length > filter.limit || pages.some((p) => p.next_cursor !== null);
  return { tasks: page, next_cursor: more && page.length > 0 ? page.at(-1)!.id : null };
}

/** Sums a per-shard count over the queue's shards. */
async function sumOver<T extends Record<string, number>>(
  route: QueueRoute,
  run: (store: TaskStore) => Promise<T>,
): Promise<T> {
  const all = await Promise.all(routeShards(route).map((s) => run(s.store)));
  const total = { ...all[0]! };
  for (const more of all.slice(1))
    for (const key of Object.keys(total)) (total as Record<string, number>)[key]! += more[key]!;
  return total;
}

/**
 * Cancels a queue's live tasks on each of its shards; fills `cancelledIds` and `settled` (the dependents
 * those cancels released or ended, read on the same shard) for the effects owner.
 */
export async function cancelQueueOf(
  route: QueueRoute,
  scope: { group?: string },
  now: number,
  cancelledIds: string[] = [],
  settled: SettledDependent[] = [],
) {
  const all = await Promise.all(
    routeShards(route).map(async (shard) => {
      const { ids, ...counts } = await shard.store.cancelQueueTasks(route.queue, scope, now);
      cancelledIds.push(...ids);
      settled.push(...(await shard.store.settledDependents(ids, now)));
      return counts;
    }),
  );
  return {
    cancelled: all.reduce((n, c) => n + c.cancelled, 0),
    cancel_requested: all.reduce((n, c) => n + c.cancel_requested, 0),
    /** Not for the answer: whether a cancelled task may have held its flow key (the effects owner wakes). */
    freesFlowKey: all.some((c) => c.freesFlowKey),
  };
}

export async function redriveQueueOf(route: QueueRoute, scope: RedriveScope, now: number) {
  const all = await Promise.all(routeShards(route).map((s) => s.store.redriveQueue(route.queue, scope, now)));
  return { redriven: all.reduce((n, r) => n + r.redriven, 0), ids: all.flatMap((r) => r.ids) };
}

export function purgeQueueOf(route: QueueRoute, options: PurgeOptions) {
  return sumOver(route, (store) => store.purgeTasks(route.queue, options));
}

/** The earliest time one of the queue's tasks becomes leasable on the given shards (a partition's). */
export async function nextRunOn(
  shards: Shard[],
  queue: string,
  now: number,
  opts: { leases?: boolean } = {},
): Promise<number | null> {
  const all = await Promise.all(shards.map((s) => s.store.nextRunAt(queue, now, opts)));
  const times = all.filter((t): t is number => t !== null);
  return times.length > 0 ? Math.min(...times) : null;
}
