/**
 * What a task enqueued with `depends_on` does when one of its dependencies ends without completing (dead,
 * cancelled or expired), defined once:
 * - `fail` (the default): it ends `dead` at once, its error naming the dependency and its state — in the
 *   dead-letter list, redrivable like any dead task;
 * - `cancel`: it ends `cancelled`, the same way but out of the dead-letter list (the pipeline was called off);
 * - `continue`: the dependency counts as finished; the task runs once all have finished, whatever their
 *   outcome, and reads each one's state with its result (GET /v1/tasks/{id}/dependencies).
 * docs/dependencies.md says why there is no separate `ignore`.
 */
export const DEPENDENCY_FAILURE_POLICIES = ["fail", "cancel", "continue"] as const;
export type DependencyFailurePolicy = (typeof DEPENDENCY_FAILURE_POLICIES)[number];
