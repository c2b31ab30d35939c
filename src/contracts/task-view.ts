import type { ChildTaskSpec, LeasedTaskView, TaskErrorEntry, TaskView } from "./task";
import type { TaskState } from "./states";
import type { StoredTask } from "./stored-task";
import { toIso } from "./time";

/**
 * The API's views of a stored task (src/contracts/stored-task.ts): what every store's tasks render as. A
 * D1 store also renders the leased view in SQL (src/engine/task-row.ts, `leasedViewJsonSql`);
 * test/engine/task-row.test.ts holds the two to the same output.
 */

/** What a view is rendered from: a stored task (its state as stored text is enough). */
export type RenderedTask = Omit<StoredTask, "state"> & { state: string };

function parseJson(text: string | null): unknown {
  return text == null ? null : JSON.parse(text);
}

/** The stored JSON columns of the view: parsed by toTaskView, spliced in as text by leasedTaskJson. */
type StoredJsonFields = "payload" | "result" | "checkpoint" | "then";

/** How many ids a stored `depends_on` array holds (null: none), without parsing it: ids are ULIDs (no commas
 * in them), so one more than its commas — a join's array may hold 10,000 of them, and a page of views reads
 * many. `json_array_length` in the SQL view below; test/engine/task-task.test.ts holds the two equal. */
function dependencyCount(dependsOn: string | null): number | null {
  if (dependsOn === null) return null;
  let commas = 0;
  for (let at = dependsOn.indexOf(","); at !== -1; at = dependsOn.indexOf(",", at + 1)) commas++;
  return commas + 1;
}

/** Every field of the view but the stored JSON ones. */
function plainFields(task: RenderedTask): Omit<TaskView, StoredJsonFields> {
  const errors = (parseJson(task.errors) as Array<Omit<TaskErrorEntry, "at"> & { at: number }>) ?? [];
  return {
    id: task.id,
    queue: task.queue,
    type: task.type,
    state: task.state as TaskState,
    priority: task.state === "waiting" ? (task.readyPriority ?? task.priority) : task.priority,
    errors: errors.map((e) => ({ ...e, at: toIso(e.at) })),
    attempts: task.attempts,
    max_attempts: task.maxAttempts,
    // A waiting task's run_at is WAITING_RUN_AT (src/engine/dependencies.ts): shown as the time it asked for.
    run_at: toIso(task.state === "waiting" ? (task.readyAt ?? task.runAt) : task.runAt),
    lease_holder: task.leaseHolder,
    lease_expires_at: toIso(task.leaseExpiresAt),
    claim_by: toIso(task.claimBy),
    cancel_requested: task.cancelRequested === 1,
    dedupe_key: task.dedupeKey,
    group: task.groupKey,
    key: task.flowKey,
    progress: task.progress,
    progress_message: task.progressMessage,
    created_at: toIso(task.createdAt),
    updated_at: toIso(task.updatedAt),
    started_at: toIso(task.startedAt),
    finished_at: toIso(task.finishedAt),
    waiting_on: task.waitingOn,
    dependency_count: dependencyCount(task.dependsOn),
    on_dependency_failure: task.onDependencyFailure as TaskView["on_dependency_failure"],
    start_by: toIso(task.startBy),
  };
}

/** Renders a stored row for the API. */
export function toTaskView(task: RenderedTask): TaskView {
  return {
    ...plainFields(task),
    payload: parseJson(task.payload),
    result: parseJson(task.result),
    checkpoint: parseJson(task.checkpoint),
    then: parseJson(task.thenTasks) as ChildTaskSpec[] | null,
  };
}

/**
 * A leased task's view (toLeasedTaskView) as JSON text: the stored JSON columns (payload, result,
 * checkpoint, then — valid JSON text, written by SQLite's JSON functions) are spliced in as they are
 * instead of parsed and serialised again, so a payload of up to 1 MiB is never parsed on the way out. The
 * long poll's answer; a direct lease's views are rendered by SQLite (`leasedViewJsonSql`).
 */
export function leasedTaskJson(task: RenderedTask): string {
  if (task.leaseToken == null) throw new Error(`task ${task.id} was returned by a lease without a token`);
  // The token added to the fields' own object (a spread copy of ~30 fields took a third of the rendering).
  const fields: Omit<TaskView, StoredJsonFields> & { lease_token?: string } = plainFields(task);
  fields.lease_token = task.leaseToken;
  const plain = JSON.stringify(fields);
  const raw = (text: string | null) => text ?? "null";
  return `${plain.slice(0, -1)},"payload":${raw(task.payload)},"result":${raw(task.result)},"checkpoint":${raw(
    task.checkpoint,
  )},"then":${raw(task.thenTasks)}}`;
}

/** Renders a freshly leased row, with the token its holder must present. */
export function toLeasedTaskView(task: RenderedTask): LeasedTaskView {
  if (task.leaseToken == null) throw new Error(`task ${task.id} was returned by a lease without a token`);
  return { ...toTaskView(task), lease_token: task.leaseToken };
}
