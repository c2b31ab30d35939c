import { startMove } from "../shards/move";
import type { OperationContext } from "./context";

/**
 * Starts moving one partition of a queue to another shard (src/shards/move.ts); the relay runs on after
 * the answer for a while, and the cron tick continues whatever is left.
 *
 * @example
 * await moveQueue(op, "emails", 0, "DB_1");
 */
export async function moveQueue(op: OperationContext, queue: string, part: number, shard: string): Promise<void> {
  await startMove(op.env, queue, part, shard, op.now);
  op.effects.after({ kind: "move-started", queue, part });
}
