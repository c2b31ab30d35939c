import type { Env } from "../env";
import { EdgeqError } from "../contracts/errors";
import type { OwedSettlement, SettledDependent } from "../engine/store";
import { isTaskMissing, onTaskShard } from "./task-locator";
import { allShards, shardNames, type Shard } from "./shard-set";

/** Settlements read per shard and round. Why 100: each is delivered with one batch on the dependent's
 * database and its drop with one statement here; 100 keeps a round's D1 time near one relay step's
 * (src/shards/relay.ts) while a fan-in's children finishing together are still delivered in one round. */
const DELIVERY_BATCH = 100;

/** Rounds per call: a delivery that ends a dependent can make that dependent's own settlements owed (a
 * failure cascading across shards); four rounds follow a cascade four shards deep at once, and the next
 * tick continues a deeper one. */
const MAX_DELIVERY_ROUNDS = 4;

/** How long a settlement whose dependent is on no shard is kept before it is dropped. Why 15 minutes: its
 * edge was written by an enqueue before the dependent's insert (src/shards/remote-dependencies.ts), and an
 * enqueue request is long over by then (D1 stops a query at 30 s); a dependent found nowhere after that was
 * never inserted (refused, deduplicated onto another task) or was purged since — nobody is waiting. */
export const ORPHAN_SETTLEMENT_MS = 15 * 60_000;

/** What a delivery pass did. */
export interface Delivered {
  /** Settlements delivered (and dropped) or dropped as orphans. */
  delivered: number;
  /** The dependents the deliveries settled (released: pending; or ended), for the effects owner. */
  settled: SettledDependent[];
}

/**
 * Delivers the settlements owed on every shard: each to wherever its dependent is now (its id's partition,
 * a move's source or destination: `onTaskShard`), then dropped from the outbox. Idempotent, and safe to run
 * twice at once or after a crash at any point: the dependent's database counts a settlement once
 * (`settleRemoteWait` fences on its wait row), and the drop comes only after the settle. A dependent in
 * transit (`task_moving`) is left for the next pass; so is one whose database failed.
 *
 * Called by the effects owner after a finish made settlements owed, and by the cron tick (the reconcile:
 * whatever a crash between a finish and its delivery left).
 *
 * @example
 * const { settled } = await deliverOwedSettlements(env, Date.now());
 */
export async function deliverOwedSettlements(env: Env, now: number): Promise<Delivered> {
  const result: Delivered = { delivered: 0, settled: [] };
  if (shardNames(env).length === 1) return deliverOn(env, allShards(env), now, result);
  for (let round = 0; round < MAX_DELIVERY_ROUNDS; round++) {
    const before = result.delivered;
    await deliverOn(env, allShards(env), now, result);
    if (result.delivered === before) break;
  }
  return result;
}

/** One round over `shards`: up to DELIVERY_BATCH settlements owed on each. */
async function deliverOn(env: Env, shards: Shard[], now: number, result: Delivered): Promise<Delivered> {
  for (const shard of shards) {
    const owed = await shard.store.owedSettlements(DELIVERY_BATCH);
    const done: OwedSettlement[] = [];
    for (const settlement of owed) {
      const outcome = await deliverOne(env, settlement, now);
      if (outcome === "later") continue;
      if (outcome !== "orphan" && outcome !== null) result.settled.push(outcome);
      done.push(settlement);
    }
    result.delivered += await shard.store.dropSettlements(done, now);
  }
  return result;
}

/** Delivers one settlement: the dependent it settled (or null: nothing to settle there), `orphan` (its
 * dependent is nowhere, long enough), or `later` (moving, not yet inserted, or its database failed). */
async function deliverOne(
  env: Env,
  owed: OwedSettlement,
  now: number,
): Promise<SettledDependent | null | "orphan" | "later"> {
  const settlement = { dependency: owed.dependency, dependent: owed.dependent, outcome: owed.outcome };
  try {
    return await onTaskShard(env, owed.dependent, (shard) => shard.store.settleRemoteWait(settlement, now));
  } catch (error) {
    if (isTaskMissing(error)) return now - owed.createdAt > ORPHAN_SETTLEMENT_MS ? "orphan" : "later";
    if (error instanceof EdgeqError && error.code === "task_moving") return "later";
    // Not fatal: the settlement stays owed and the next pass (the tick's) delivers it.
    console.error(`dependencies: delivering ${owed.dependency} -> ${owed.dependent} failed`, error);
    return "later";
  }
}
