import type { NewTask, TaskField } from "../engine/enqueue";
import type { FanOutResult } from "../engine/fan-out";
import { pickPart, type QueueRoute } from "./queue-route";
import { slotIdFactory } from "./task-slot";

const slotId = slotIdFactory();

/**
 * A fan-out with its join (src/engine/fan-out.ts) on one partition of the queue — the join's (by its group,
 * as any enqueue picks) — so that its children, the join and their edges are one batch of one database. Ids
 * carry that partition's slot, as every enqueue's do. Answers the partition written, for its wake-up.
 *
 * @example
 * const { tasks, join, part } = await fanOutOnQueue(route, children, { type: "stitch" }, Date.now(), tasksField);
 */
export async function fanOutOnQueue(
  route: QueueRoute,
  children: NewTask[],
  join: NewTask,
  now: number,
  field: TaskField,
): Promise<FanOutResult & { part: number }> {
  const part = pickPart(route, join);
  const result = await part.shard.store.enqueueFanOut(
    route.queue,
    children.map((child) => ({ ...child, id: slotId(part.slot, now) })),
    { ...join, id: slotId(part.slot, now) },
    now,
    field,
  );
  return { ...result, part: part.part };
}
