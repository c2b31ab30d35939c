import * as z from "zod";
import { component } from "./component";
import { ShortText, TaskKey, TaskStateSchema, TaskType } from "./fields";
import { MAX_BULK_PER_CALL } from "./limits";
import type { TaskState } from "./states";

/** What a bulk action does to the tasks its filter matches. */
export const BULK_ACTIONS = ["cancel", "retry", "redrive"] as const;
export type BulkAction = (typeof BULK_ACTIONS)[number];

/**
 * The states each action changes (a filter's `state` must be one of them): `cancel` — pending tasks at once,
 * processing ones by cancel request (as POST /v1/tasks/{id}/cancel); `retry` — dead or cancelled tasks back to
 * pending now, attempts reset (as POST /v1/tasks/{id}/retry); `redrive` — the dead ones only, the dead-letter
 * set (as POST /v1/queues/{queue}/redrive by default, and SQS's redrive).
 */
export const BULK_ACTION_STATES: Record<BulkAction, readonly TaskState[]> = {
  cancel: ["pending", "processing"],
  retry: ["dead", "cancelled"],
  redrive: ["dead"],
};

const IsoTime = z.iso.datetime({ offset: true }).meta({ example: "2026-11-21T12:00:00.000Z" });

/**
 * Which of a queue's tasks a bulk action touches: every field given must match (none given: every task the
 * action can change). A new field is one more optional entry here and one in the engine's `TaskFilter`
 * (src/engine/bulk.ts, whose table of conditions the compiler then holds to it) — `key` was added so.
 */
export const BulkFilter = z
  .strictObject({
    state: TaskStateSchema.optional(),
    type: TaskType.optional(),
    group: ShortText(128).optional(),
    key: TaskKey.optional().meta({ description: "only tasks of this flow-control key" }),
    created_after: IsoTime.optional().meta({ description: "only tasks created at or after this time" }),
    created_before: IsoTime.optional().meta({ description: "only tasks created before this time" }),
  })
  .refine(
    (f) =>
      f.created_after === undefined ||
      f.created_before === undefined ||
      Date.parse(f.created_after) < Date.parse(f.created_before),
    { message: "must be later than created_after", path: ["created_before"] },
  );

/** `POST /v1/queues/{queue}/bulk`: an action, the filter (required: `{}` says "every task" explicitly), a
 * dry run that only counts, and a cap below MAX_BULK_PER_CALL. */
export const BulkBody = z
  .strictObject({
    action: z.enum(BULK_ACTIONS),
    filter: BulkFilter,
    dry_run: z.boolean().default(false),
    limit: z
      .number()
      .int()
      .min(1)
      .max(MAX_BULK_PER_CALL)
      .default(MAX_BULK_PER_CALL)
      .meta({ description: `at most this many tasks per database holding the queue (≤ ${MAX_BULK_PER_CALL})` }),
  })
  .superRefine((body, ctx) => {
    const states = BULK_ACTION_STATES[body.action];
    if (body.filter.state !== undefined && !states.includes(body.filter.state)) {
      ctx.addIssue({
        code: "custom",
        path: ["filter", "state"],
        message: `${body.action} acts on ${states.join(" or ")} tasks, not ${body.filter.state}`,
      });
    }
  });

export const BulkResponse = z
  .object({
    action: z.enum(BULK_ACTIONS),
    dry_run: z.boolean(),
    count: z.number().int().meta({
      description: "tasks changed (on a dry run: that would be), at most `limit` per database holding the queue",
    }),
    more: z.boolean().meta({ description: "true when more tasks match than this call took: call again" }),
  })
  .meta(component("BulkAnswer"));
