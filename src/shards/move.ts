import { sql } from "drizzle-orm";
import type { Env } from "../env";
import { EdgeqError } from "../contracts/errors";
import { giveWay } from "../db/give-way";
import { ensurePlacements, forgetPlacements, readPlacements, type Placement } from "./directory";
import { advanceMove, moveSelection, RELAY_PAUSE_MS } from "./relay";
import { homeShard, shardNames, shardOf } from "./shard-set";

/**
 * Starts moving one partition of a queue to another shard, online. The directory row changes first (new
 * writes and leases go to the new shard; the old one is still leased from and consulted by single-task
 * calls), the config is copied, then the relay (src/shards/relay.ts) takes the partition's tasks across
 * in chunks, each task in transit — never live on both shards. Leases held during the move keep their
 * token and stay valid on whichever shard holds the task; for the moment a task is in transit, a call on
 * it is `task_moving` (503, retry after a second). Starting copies no task: it answers at once, and the
 * copy runs after (runMove, then the cron tick).
 *
 * The queue's stored row goes with it — config, SQS settings and tags — read from the shard of partition 0,
 * which holds the queue's record (the SQS endpoint reads and writes it there).
 *
 * @example
 * await startMove(env, "renders", 0, "DB_1", Date.now());
 */
export async function startMove(env: Env, queue: string, part: number, to: string, now: number): Promise<Placement> {
  if (!shardNames(env).includes(to)) {
    throw new EdgeqError("invalid_request", `shard: no shard ${to} is bound (shards: ${shardNames(env).join(", ")})`);
  }
  const rows = await ensurePlacements(env, queue, null, now);
  const placement = rows.find((p) => p.part === part);
  if (!placement) throw new EdgeqError("invalid_request", `part: the queue has partitions 0..${rows.length - 1}`);
  if (placement.movingFrom) {
    throw new EdgeqError(
      "move_conflict",
      `partition ${part} of ${queue} is already moving (${placement.movingFrom} -> ${placement.shard})`,
    );
  }
  if (placement.shard === to)
    throw new EdgeqError("move_conflict", `partition ${part} of ${queue} is already on ${to}`);
  // The destination's copy of the queue's row first: its lease statements read the config of their
  // database, and after a move of partition 0 the SQS endpoint reads its settings and tags there.
  // Every stored field as stored; a queue with no record (defaults only) leaves the destination as it is.
  const record = await shardOf(env, rows[0]!.shard).store.readQueueRecord(queue);
  if (record) await shardOf(env, to).store.replaceQueueRecord(record);
  const changed = await homeShard(env).db.all<{
    part: number;
  }>(sql`UPDATE placements SET moving_from = shard, shard = ${to},
      move_state = 'copying', move_started_at = ${now}, move_copied_at = NULL, move_relayed = 0, updated_at = ${now}
    WHERE queue = ${queue} AND part = ${part} AND moving_from IS NULL AND shard = ${placement.shard}
    RETURNING part`);
  if (changed.length === 0)
    throw new EdgeqError("move_conflict", `partition ${part} of ${queue} changed meanwhile; try again`);
  forgetPlacements(queue);
  return (await readPlacements(homeShard(env).db, queue)).find((p) => p.part === part)!;
}

/**
 * Runs a move's relay steps for up to `budgetMs` (a request's waitUntil; the cron continues any move left).
 * It gives way first, so the request that started the move has answered before the copy's first statement.
 */
export async function runMove(
  env: Env,
  queue: string,
  part: number,
  budgetMs: number,
  now: () => number,
): Promise<void> {
  const deadline = now() + budgetMs;
  await giveWay(RELAY_PAUSE_MS);
  while (now() < deadline) {
    const placement = (await readPlacements(homeShard(env).db, queue)).find((p) => p.part === part);
    if (!placement?.movingFrom) return;
    const { state } = await advanceMove(env, placement, now(), { maxSteps: 10 });
    if (state !== "copying") return;
  }
}

/**
 * What the placement route shows: each partition, its shard, and a move's progress. `left_on_source` counts
 * this partition's tasks only (moveSelection): another partition on the same source shard is not left over.
 */
export async function placementView(env: Env, queue: string) {
  const rows = await readPlacements(homeShard(env).db, queue);
  return Promise.all(
    rows.map(async (p) => {
      const left = p.movingFrom
        ? await shardOf(env, p.movingFrom).store.countQueueTasksHeld(queue, moveSelection(p, rows).partition)
        : 0;
      return {
        part: p.part,
        shard: p.shard,
        move: p.movingFrom
          ? {
              from: p.movingFrom,
              state: p.moveState,
              started_at: p.moveStartedAt,
              relayed: p.moveRelayed,
              left_on_source: left,
            }
          : null,
      };
    }),
  );
}
