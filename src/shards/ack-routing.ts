import { EdgeqError } from "../contracts/errors";
import type { AckOutcome, TaskStore } from "../engine/store";
import { isTaskMissing } from "./task-locator";
import { routeShards, type QueueRoute } from "./queue-route";
import type { Shard } from "./shard-set";
import { decodeSlot } from "./task-slot";

/**
 * The queue's shards in the order to try for one task: the shard of the partition its id's slot names
 * (then the shard that partition is moving from), then the queue's other shards (an id that carries no
 * slot, a task relayed from another shard).
 */
function candidates(route: QueueRoute, id: string): Shard[] {
  const slot = decodeSlot(id);
  const part = route.parts.find((p) => p.slot === slot);
  const first = part ? [part.shard, ...(part.movingFrom ? [part.movingFrom] : [])] : [];
  const rest = routeShards(route).filter((s) => !first.some((f) => f.name === s.name));
  return [...first, ...rest];
}

/**
 * Runs a batch of fenced calls (complete, fail, release, extend) for one queue over its shards: items are
 * grouped by their most likely shard and each group is one engine call (the shards in parallel); an item
 * a shard answers "not found" for goes on to its next candidate. A miss changes nothing, so no item is
 * applied twice. An item every candidate missed while its task is in transit (a move's copy step holds it
 * for a moment) is `task_moving`, not `not_found`: its lease is still good once the task lands. Outcomes
 * come back in input order.
 *
 * @example
 * const outcomes = await ackOnRoute(route, items, (store, group) => store.completeTasks(group, now, { queue }));
 */
export async function ackOnRoute<I extends { id: string }>(
  route: QueueRoute,
  items: I[],
  run: (store: TaskStore, items: I[]) => Promise<AckOutcome[]>,
): Promise<AckOutcome[]> {
  if (items.length === 0) return [];
  const shards = routeShards(route);
  if (shards.length === 1) return run(shards[0]!.store, items);
  const outcomes = new Array<AckOutcome | undefined>(items.length);
  const queue = items.map((item, i) => ({ i, item, left: candidates(route, item.id) }));
  let pending = queue;
  while (pending.length > 0) {
    const groups = new Map<string, { shard: Shard; entries: typeof pending }>();
    for (const entry of pending) {
      const shard = entry.left.shift()!;
      const group = groups.get(shard.name) ?? { shard, entries: [] };
      group.entries.push(entry);
      groups.set(shard.name, group);
    }
    const next: typeof pending = [];
    await Promise.all(
      [...groups.values()].map(async ({ shard, entries }) => {
        const results = await run(
          shard.store,
          entries.map((e) => e.item),
        );
        results.forEach((outcome, k) => {
          const entry = entries[k]!;
          outcomes[entry.i] = outcome;
          if (isTaskMissing(outcome) && entry.left.length > 0) next.push(entry);
        });
      }),
    );
    pending = next;
  }
  return retryMisses(route, items, outcomes as AckOutcome[], run);
}

/**
 * The items every candidate missed, tried once more: the route read fresh (this isolate's may be up to
 * ROUTE_CACHE_MS old and not know a move), each moving partition's source, then its transit table, then its
 * destination — the order a task moves in, so a task moving meanwhile is met on one of them (the take-out
 * and the delivery each commit in one batch). Then the queue's other shards. One in transit is
 * `task_moving` (503, retry): its lease is still good once it lands. What is still missed is `not_found`.
 */
async function retryMisses<I extends { id: string }>(
  route: QueueRoute,
  items: I[],
  outcomes: AckOutcome[],
  run: (store: TaskStore, items: I[]) => Promise<AckOutcome[]>,
): Promise<AckOutcome[]> {
  let missing = outcomes.flatMap((o, i) => (isTaskMissing(o) ? [i] : []));
  if (missing.length === 0) return outcomes;
  const fresh = route.refresh ? await route.refresh() : route;
  const order = fresh.parts.flatMap((p) => (p.movingFrom ? [{ shard: p.movingFrom, source: true }] : []));
  for (const shard of routeShards(fresh)) order.push({ shard, source: false });
  for (const { shard, source } of order) {
    if (missing.length === 0) break;
    const results = await run(
      shard.store,
      missing.map((i) => items[i]!),
    );
    results.forEach((outcome, k) => {
      if (!isTaskMissing(outcome)) outcomes[missing[k]!] = outcome;
    });
    missing = missing.filter((i) => isTaskMissing(outcomes[i]));
    if (!source || missing.length === 0) continue;
    const moving = new Set(await shard.store.findInTransit(missing.map((i) => items[i]!.id)));
    for (const i of missing.filter((i) => moving.has(items[i]!.id))) {
      const id = items[i]!.id;
      outcomes[i] = {
        id,
        ok: false,
        error: new EdgeqError("task_moving", `task ${id} is moving between shards; retry in a second`),
      };
    }
    missing = missing.filter((i) => !moving.has(items[i]!.id));
  }
  return outcomes;
}
