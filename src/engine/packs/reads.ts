import type { Db } from "../../db/client";
import { NotFoundError } from "../../contracts/errors";
import type { TaskState } from "../../contracts/states";
import type { StoredTask } from "../../contracts/stored-task";
import type { TaskEventFields } from "../read";
import { locateTasks } from "./locate";
import { slotState } from "./slot-rules";
import { storedSlot } from "./stored-slot";

/** getTask: the task by id, every field (its spilled values read back); `not_found` when absent. */
export async function getPackTask(db: Db, id: string): Promise<StoredTask> {
  const at = (await locateTasks(db, [id])).get(id);
  if (!at) throw new NotFoundError(`task ${id}`);
  return storedSlot(at.pack, at.k);
}

/** findTaskState: the task's state, or null when the store has no such task. */
export async function findPackTaskState(db: Db, id: string): Promise<TaskState | null> {
  const at = (await locateTasks(db, [id])).get(id);
  return at ? slotState(at.slot) : null;
}

/**
 * readTaskEventFields: what events show of each task held (by id, a client's own through `pack_ids`), as it is
 * now, in the order asked; ids the store does not hold are left out.
 *
 * @example
 * const [fields] = await readPackTaskEventFields(db, [id]);
 */
export async function readPackTaskEventFields(db: Db, ids: string[]): Promise<TaskEventFields[]> {
  const found = await locateTasks(db, ids);
  return [...new Set(ids)].flatMap((id) => {
    const at = found.get(id);
    if (!at) return [];
    const t = storedSlot(at.pack, at.k);
    return [
      {
        id: t.id,
        type: t.type,
        group_key: t.groupKey,
        state: t.state,
        attempts: t.attempts,
        run_at: t.runAt,
        errors: t.errors,
        progress: t.progress,
        progress_message: t.progressMessage,
      },
    ];
  });
}
