import { EdgeqError } from "./errors";

/**
 * How the caller's request names a field of its task `i` in an error: `tasks[3].payload` for a batch (the
 * default, `tasksField`), plain `payload` for a body that is one task. `name` "" names the task itself.
 * A store's refusals (src/engine/store.ts) name fields this way, so a 400 points at the caller's own field.
 */
export type TaskField = (i: number, name: string) => string;

/** A batch's names: `tasks[i].name` (`tasks[i]` for the task itself). */
export const tasksField: TaskField = (i, name) => `tasks[${i}]${name ? `.${name}` : ""}`;

/** A one-task body's names: the field's own name. */
export const oneTaskField: TaskField = (_i, name) => name;

/** A fan-out's join's names: `join.name` (`join` for the task itself). */
export const joinField: TaskField = (_i, name) => `join${name ? `.${name}` : ""}`;

/**
 * The refusal, naming the field (as `field` names task `i`'s), the id and the queue it belongs to (null: one
 * another enqueue is taking it for right now, not known here).
 *
 * @example
 * throw idInOtherQueue(2, "01J…", "emails");
 */
export function idInOtherQueue(i: number, id: string, queue: string | null, field: TaskField = tasksField): EdgeqError {
  const owner = queue === null ? "another queue" : `queue ${queue}`;
  return new EdgeqError(
    "id_in_other_queue",
    `${field(i, "id")}: ${id} belongs to ${owner}; task ids are unique across queues, so nothing was enqueued`,
  );
}
