import { requireKnownQueue } from "../shards/known-queue";
import { placementView, startMove } from "../shards/move";
import type { OperationContext } from "./context";

/** A queue's partitions as the placement route shows them. */
export type PlacementView = Awaited<ReturnType<typeof placementView>>;

/**
 * Which shard holds each partition of a queue, and a move's progress; `404 not_found` for a queue never
 * used (src/shards/known-queue.ts).
 *
 * @example
 * const partitions = await queuePlacement(op, "emails");
 */
export async function queuePlacement(op: OperationContext, queue: string): Promise<PlacementView> {
  await requireKnownQueue(op.env, queue);
  return placementView(op.env, queue);
}

/**
 * Starts moving one partition of a queue to another shard (src/shards/move.ts) and answers with the
 * placement; the copy starts only after that answer is read (the relay runs on in the background of this
 * invocation for a while, and the cron tick continues whatever is left), so no copy statement is ahead of it.
 * A queue never used is `404 not_found`, and nothing is placed for it.
 *
 * @example
 * const partitions = await moveQueue(op, "emails", 0, "DB_1");
 */
export async function moveQueue(
  op: OperationContext,
  queue: string,
  part: number,
  shard: string,
): Promise<PlacementView> {
  await requireKnownQueue(op.env, queue);
  await startMove(op.env, queue, part, shard, op.now);
  const view = await placementView(op.env, queue);
  op.effects.after({ kind: "move-started", queue, part });
  return view;
}
