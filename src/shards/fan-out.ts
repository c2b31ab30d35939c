import type { FanOutResult, NewTask, TaskField } from "../engine/store";
import { pickPart, type QueueRoute } from "./queue-route";
import { slotIdFactory } from "./task-slot";
import { placeRemoteDependencies } from "./remote-dependencies";
import { shardNames } from "./shard-set";
import type { Env } from "../env";

/** How a refusal names the join's fields. */
const joinField: TaskField = (_i, name) => `join${name ? `.${name}` : ""}`;

const slotId = slotIdFactory();

/**
 * A fan-out with its join (src/engine/fan-out.ts) on one partition of the queue — the join's (by its group,
 * as any enqueue picks) — so that its children, the join and their edges are one batch of one database. Ids
 * carry that partition's slot, as every enqueue's do. Answers the partition written, for its wake-up.
 *
 * @example
 * const { tasks, join, part } = await fanOutOnQueue(env, route, children, { type: "stitch" }, Date.now(), tasksField);
 */
export async function fanOutOnQueue(
  env: Env,
  route: QueueRoute,
  children: NewTask[],
  join: NewTask,
  now: number,
  field: TaskField,
): Promise<FanOutResult & { part: number; remoteDependencies: boolean }> {
  const part = pickPart(route, join);
  const joinId = slotId(part.slot, now);
  // The join's own dependencies on other shards: found there, their edges written first.
  const [placed] =
    shardNames(env).length > 1
      ? await placeRemoteDependencies(env, route.queue, [join], [joinId], [part], joinField, now)
      : [join];
  const result = await part.shard.store.enqueueFanOut(
    route.queue,
    children.map((child) => ({ ...child, id: slotId(part.slot, now) })),
    { ...placed!, id: joinId },
    now,
    field,
  );
  return { ...result, part: part.part, remoteDependencies: placed!.remoteDependencies !== undefined };
}
