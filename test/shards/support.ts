import { env } from "cloudflare:workers";
import { openDb, type Db } from "../../src/db/client";
import { rankShards, readPlacements } from "../../src/shards/directory";
import { advanceMove, MOVE_SETTLE_MS } from "../../src/shards/relay";
import { shardNames } from "../../src/shards/shard-set";
import { queueTasksOn, uniqueQueue } from "../helpers";

/** One of the test deployment's two shards, by binding name. */
export const shard = (name: string): Db => openDb(name === "DB" ? env.DB : env.DB_1);

/** The ids of a queue's tasks on one shard, in id order, read through its store (rows and packs alike). */
export async function idsOn(name: string, queue: string): Promise<string[]> {
  return (await queueTasksOn(shard(name), queue)).map((t) => t.id);
}

/** A fresh queue name that the placement rule sends to `want` first (rendezvous hashing over DB, DB_1). */
export function queueOn(want: "DB" | "DB_1", prefix: string): string {
  for (;;) {
    const name = uniqueQueue(prefix);
    if (rankShards(name, shardNames(env))[0] === want) return name;
  }
}

/** Runs a partition's move until its copy is done (state `settling`). */
export async function copyAll(queue: string, part: number, now: number): Promise<void> {
  for (let i = 0; i < 20; i++) {
    const p = (await readPlacements(shard("DB"), queue)).find((r) => r.part === part)!;
    if ((await advanceMove(env, p, now)).state !== "copying") return;
  }
  throw new Error("the move did not finish copying in 20 rounds");
}

/** Runs a partition's move to its end: the copy, then the settle period's last sweep (MOVE_SETTLE_MS later). */
export async function finishMove(queue: string, part: number, now: number): Promise<void> {
  await copyAll(queue, part, now);
  const p = (await readPlacements(shard("DB"), queue)).find((r) => r.part === part)!;
  const { state } = await advanceMove(env, p, now + MOVE_SETTLE_MS + 1);
  if (state !== "done") throw new Error(`the move is ${state} after its settle period`);
}
