import * as z from "zod";
import { component } from "../contracts/component";
import { QUEUE_NAME_PATTERN, QUEUE_NAME_RULE } from "../contracts/limits";
import { NewTaskSchema } from "../contracts/api";

/** Schedule names follow the queue-name rule: they appear in URL paths and in every slot's task id seed. */
export const ScheduleName = z.string().regex(QUEUE_NAME_PATTERN, { message: `must be ${QUEUE_NAME_RULE}` });

export const ScheduleParams = z.object({
  name: ScheduleName.meta({ param: { name: "name", in: "path" } }),
});

/** The task each slot enqueues: the enqueue fields that make sense for a recurring task. */
const task = NewTaskSchema.shape;
export const ScheduledTaskSchema = z
  .strictObject({
    type: task.type,
    payload: task.payload,
    priority: task.priority,
    group: task.group,
    key: task.key,
    max_attempts: task.max_attempts,
    dedupe_key: task.dedupe_key,
    expires_in_s: task.expires_in_s,
  })
  .meta(component("ScheduledTask"));

export const ScheduleBody = z
  .object({
    queue: z.string().regex(QUEUE_NAME_PATTERN, { message: `must be ${QUEUE_NAME_RULE}` }),
    cron: z.string().min(1).meta({
      description:
        "5 fields (minute first), 6 (second first), or @every 30s / 5m / 1h / 1d; one no date matches (0 0 30 2 *) is refused",
      example: "*/30 * * * * *",
    }),
    timezone: z.string().min(1).optional().meta({ description: "IANA time zone; default UTC" }),
    task: ScheduledTaskSchema.optional(),
    overlap: z.enum(["allow", "skip"]).optional(),
    catch_up: z.enum(["none", "last", "all"]).optional(),
    paused: z.boolean().optional(),
  })
  .strict()
  .meta(component("ScheduleBody"));

const Iso = z.string().nullable();

export const ScheduleView = z
  .object({
    name: z.string(),
    queue: z.string(),
    cron: z.string(),
    timezone: z.string(),
    task: z.record(z.string(), z.unknown()),
    overlap: z.enum(["allow", "skip"]),
    catch_up: z.enum(["none", "last", "all"]),
    paused: z.boolean(),
    next_run_at: Iso,
    /** The next 5 slots (fewer when the expression ends), ISO. */
    next_runs: z.array(z.string()),
    last_run: z
      .object({
        slot: z.string(),
        outcome: z.string().nullable(),
        task_id: z.string().nullable(),
        task_state: z.string().nullable(),
        error: z.string().nullable(),
      })
      .nullable(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta(component("Schedule"));

export const ScheduleListResponse = z.object({ schedules: z.array(ScheduleView) }).meta(component("ScheduleList"));

export const TriggerResponse = z
  .object({ name: z.string(), task: z.object({ id: z.string(), deduplicated: z.boolean() }) })
  .meta(component("ScheduleTrigger"));
