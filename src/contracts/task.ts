import * as z from "zod";
import { component } from "./component";
import { DEPENDENCY_FAILURE_POLICIES } from "./dependencies";
import { MAX_ATTEMPTS_LIMIT, MAX_DELAY_S } from "./limits";
import { Priority, QueueName, ShortText, storedJson, TaskKey, TaskStateSchema, TaskType } from "./fields";

/**
 * The task as the API shows it, and the `then` children it carries, defined once: the HTTP layer
 * validates and documents with these schemas, and the engine's types are `z.infer` of them, so the two
 * cannot drift apart.
 */

/** Most children one task may chain, and how deep chains may nest (scan -> enrich -> publish is 3). */
export const MAX_CHILDREN = 10;
const MAX_CHAIN_DEPTH = 5;

/**
 * A task to enqueue when its parent completes. Its nested `then` is checked level by level by
 * `checkThen` (a recursive zod schema would make the OpenAPI generator recurse forever).
 */
export const ChildTaskSpecSchema = z
  .strictObject({
    type: TaskType,
    queue: QueueName.optional().meta({ description: "default: the parent's queue" }),
    payload: storedJson(z.record(z.string(), z.unknown()))
      .optional()
      .meta({ description: "an object; it receives `parent: { id, type, result }`" }),
    priority: Priority.optional().meta({ description: "default: the parent's" }),
    delay_s: z.number().min(0).max(MAX_DELAY_S).optional(),
    max_attempts: z.number().int().min(1).max(MAX_ATTEMPTS_LIMIT).optional(),
    dedupe_key: ShortText(256).optional(),
    group: ShortText(128).optional().meta({ description: "default: the parent's" }),
    key: TaskKey.optional().meta({
      description: "flow control's key (docs/flow-control.md); default: the parent's",
    }),
    then: z.array(z.unknown()).max(MAX_CHILDREN).optional().meta({ description: "children of this child" }),
  })
  .meta(component("ChildTask"));

/**
 * A task to enqueue when its parent completes, in the same D1 batch as the completion. Its payload (an
 * object) receives `parent: { id, type, result }`; `queue`, `group` and `priority` default to the
 * parent's. Its own `then` is typed `unknown[]`, as the schema types it: `checkThen` has checked every
 * level, and the engine only stores the list as JSON.
 */
export type ChildTaskSpec = z.infer<typeof ChildTaskSpecSchema>;

/**
 * Validates a `then` list and every nested one, adding issues at their full paths.
 *
 * @example
 * NewTask.superRefine((t, ctx) => t.then?.forEach((c, i) => c.then && checkThen(c.then, ["then", i, "then"], 2, ctx)));
 */
export function checkThen(then: unknown[], path: PropertyKey[], depth: number, ctx: z.RefinementCtx): void {
  if (depth > MAX_CHAIN_DEPTH) {
    ctx.addIssue({ code: "custom", message: `chains nest at most ${MAX_CHAIN_DEPTH} levels`, path });
    return;
  }
  then.forEach((child, i) => {
    const parsed = ChildTaskSpecSchema.safeParse(child);
    if (!parsed.success) {
      for (const issue of parsed.error.issues) {
        const params = issue.code === "custom" ? issue.params : undefined;
        ctx.addIssue({ code: "custom", message: issue.message, params, path: [...path, i, ...issue.path] });
      }
      return;
    }
    if (parsed.data.then) checkThen(parsed.data.then, [...path, i, "then"], depth + 1, ctx);
  });
}

const ErrorEntry = z.object({
  attempt: z.number().int(),
  at: z.string(),
  message: z.string(),
  kind: z.enum(["error", "permanent", "lease_expired", "dependency"]),
});

/**
 * One entry of a task's error history. `kind` — error: retryable failure; permanent: non-retryable
 * failure; lease_expired: the holder went silent; dependency: a dependency ended without completing
 * (docs/dependencies.md).
 */
export type TaskErrorEntry = z.infer<typeof ErrorEntry>;

export const TaskSchema = z
  .object({
    id: z.string(),
    queue: z.string(),
    type: z.string(),
    state: TaskStateSchema,
    priority: z.number().int(),
    payload: z.unknown(),
    result: z.unknown(),
    errors: z.array(ErrorEntry),
    attempts: z.number().int(),
    max_attempts: z.number().int(),
    run_at: z.string(),
    lease_holder: z.string().nullable(),
    lease_expires_at: z.string().nullable(),
    claim_by: z.string().nullable().meta({
      description:
        "set while a lease handed to a long poll after it waited is unclaimed: unless the holder claims it before this time with any fenced call (POST /v1/queues/{queue}/extend on receipt, or a heartbeat, complete, fail or release), the lease is void and the task goes back with its attempt refunded",
    }),
    cancel_requested: z.boolean(),
    dedupe_key: z.string().nullable(),
    group: z.string().nullable(),
    key: z.string().nullable().meta({ description: "the task's key for flow control (docs/flow-control.md)" }),
    progress: z.number().int().nullable(),
    progress_message: z.string().nullable(),
    created_at: z.string(),
    updated_at: z.string(),
    started_at: z.string().nullable(),
    finished_at: z.string().nullable(),
    waiting_on: z.number().int().nullable().meta({
      description:
        "dependencies not finished yet (the task is waiting while above 0); null for a task enqueued without depends_on",
    }),
    dependency_count: z.number().int().nullable().meta({
      description:
        "how many tasks it depends on (its depends_on, a join's children among them, each once); null without dependencies. dependency_count - waiting_on of them have finished",
    }),
    on_dependency_failure: z.enum(DEPENDENCY_FAILURE_POLICIES).nullable().meta({
      description: "what a dependency ending dead, cancelled or expired does to it; null without dependencies",
    }),
    start_by: z.string().nullable().meta({
      description: "the start deadline: not started by then, the task ends expired (never leased after it)",
    }),
    checkpoint: z.unknown().meta({ description: "what the holder saved for a retry to resume from" }),
    then: z.array(ChildTaskSpecSchema).nullable().meta({ description: "tasks enqueued when it completes" }),
  })
  .meta(component("Task"));

/** A task as the API shows it: snake_case fields, ISO-8601 UTC times, JSON parsed. */
export type TaskView = z.infer<typeof TaskSchema>;

export const LeasedTaskSchema = TaskSchema.extend({ lease_token: z.string() }).meta(
  component("LeasedTask", TaskSchema),
);

/** A freshly leased task, with the token its holder must present. */
export type LeasedTaskView = z.infer<typeof LeasedTaskSchema>;
