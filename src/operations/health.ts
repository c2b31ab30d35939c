import { evaluateHealth, type QueueHealth } from "../health/check-health";
import { readStores } from "../shards/cross-shard";
import { homeShard } from "../shards/shard-set";
import type { OperationContext } from "./context";

/**
 * Evaluates queue health (one queue, or all) and records any alert a change of status owes; the alerts
 * are delivered after the answer, so a slow receiver never delays it.
 *
 * @example
 * const [health] = await checkHealth(op, { queue: "emails" });
 */
export async function checkHealth(op: OperationContext, scope: { queue?: string }): Promise<QueueHealth[]> {
  const health = await evaluateHealth(homeShard(op.env).db, op.now, scope, readStores(op.env));
  op.effects.after({ kind: "alerts-recorded" });
  return health;
}
