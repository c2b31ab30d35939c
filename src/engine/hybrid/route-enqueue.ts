import type { NewTask } from "../enqueue-rows";
import type { QueueConfig } from "../queue-config";

/**
 * Fewest tasks in one enqueue call that go into packs. Why 2: a pack of one writes more rows than a row —
 * its row and `packs_live` entry, then a counter row per call at enqueue, lease and completion (8 rows over
 * its life against a row's 5.05 with its counter events kept in the row: docs/design/packs.md, "The
 * decision") — while a pack of two already writes fewer per task (3.5).
 */
export const MIN_PACKED_CALL = 2;

/**
 * Whether an enqueue call goes into packs: at least MIN_PACKED_CALL tasks, every one plain — no id of the
 * client's, no dedupe key, no group, no `then`, no flow key, no dependencies, no start deadline, no uniqueness key, no
 * partition slot — on a queue without flow control. Everything else goes into rows, whose store keeps those
 * capabilities: a call is never split between the two (one call, one atomic store per chunk).
 *
 * Why no group: a processor reads its group's completed results through an index of rows
 * (`collectCompletedResults`: src/engine/completed-results.ts); a pack keeps a task's group in its slot.
 *
 * Why no client ids or dedupe keys: each is unique across the queue's tasks, and the two layouts keep them in
 * different tables (`tasks`' unique indexes, `pack_keys` / `pack_ids`); a key or id kept in one would not be
 * seen by an enqueue into the other. Why not on a flow queue: a flow queue's unkeyed tasks are leased by flow
 * control's lease (the queue's pause and rate: src/engine/flow-lease.ts), which reads rows only.
 */
export async function goesIntoPacks(
  tasks: readonly NewTask[],
  config: () => Promise<Pick<QueueConfig, "flow">>,
): Promise<boolean> {
  // The queue's config is read only for a call that could go into packs (one read more for such a call).
  return tasks.length >= MIN_PACKED_CALL && tasks.every(isPlain) && (await config()).flow === null;
}

function isPlain(task: NewTask): boolean {
  return (
    task.id === undefined &&
    task.dedupeKey === undefined &&
    task.group === undefined &&
    task.key === undefined &&
    (task.then === undefined || task.then.length === 0) &&
    task.slot === undefined &&
    (task.dependsOn === undefined || task.dependsOn.length === 0) &&
    (task.remoteDependencies === undefined || task.remoteDependencies.length === 0) &&
    task.startBy === undefined &&
    task.unique === undefined
  );
}
