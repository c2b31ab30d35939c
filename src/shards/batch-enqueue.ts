import { EdgeqError } from "../contracts/errors";
import type { NewTask, PreparedStatements } from "../engine/store";
import type { TaskField } from "../contracts/task-field";
import { pickPart, type QueueRoute } from "./queue-route";
import { slotIdFactory } from "./task-slot";

const slotId = slotIdFactory();

/**
 * The statements (prepared on that database: the store's prepareEnqueue) that enqueue `input` onto the queue inside a batch of the D1 binding `d1` (beside its
 * caller's own writes), and the partitions they write: each task joins a part (pickPart) and gets an id
 * carrying that part's slot, as any enqueue's does. Every partition of the queue must live on that
 * database — a batch is one database's transaction — or nothing is prepared: an `invalid_request` naming
 * where the queue is.
 *
 * @example
 * const { statements, parts } = batchEnqueueOnQueue(route, env.DB, [{ payload }], Date.now(), tasksField);
 */
export function batchEnqueueOnQueue(
  route: QueueRoute,
  d1: D1Database,
  input: NewTask[],
  now: number,
  field: TaskField,
): PreparedStatements & { parts: number[] } {
  const elsewhere = route.parts.find((part) => part.shard.db.$client !== d1);
  if (elsewhere) {
    throw new EdgeqError(
      "invalid_request",
      `queue ${route.queue}: partition ${elsewhere.part} is on the database bound as ${elsewhere.shard.name}, not the one given: its tasks can go into a batch of that database only (GET /v1/queues/${route.queue}/placement shows where it is; POST /v1/queues/${route.queue}/move moves it)`,
    );
  }
  const parts = input.map((task) => pickPart(route, task));
  // The id carries its partition's slot (a task of partition 0 of an unpartitioned queue too).
  const tasks = input.map((task, i) => ({ ...task, id: slotId(parts[i]!.slot, now) }));
  // Every partition is on that one database, so partition 0's store prepares them all.
  const prepared = route.parts[0]!.shard.store.prepareEnqueue(route.queue, tasks, now, field);
  return { ...prepared, parts: [...new Set(parts.map((p) => p.part))] };
}
