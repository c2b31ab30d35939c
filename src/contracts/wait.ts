import * as z from "zod";
import { component } from "./component";
import { MAX_TASK_WAIT_S } from "./limits";
import { TaskSchema } from "./task";

/** `GET /v1/tasks/{id}/wait`'s query: how long to wait, in seconds (0 answers at once; fractions allowed). */
export const WaitQuery = z.object({
  timeout_s: z.coerce
    .number()
    .min(0)
    .max(MAX_TASK_WAIT_S)
    .default(MAX_TASK_WAIT_S)
    .meta({
      description: `how long to wait for the task to finish, in seconds (0 to ${MAX_TASK_WAIT_S}, default ${MAX_TASK_WAIT_S})`,
    }),
});

/**
 * What a wait answers, always 200: the task as it is now, and whether it is finished (completed, dead,
 * cancelled). `finished: false` means the wait ran out first (or was cut short): wait again.
 */
export const WaitResponse = z
  .object({
    finished: z.boolean().meta({
      description: "true when the task is in a final state; false when the wait ended first (wait again)",
    }),
    task: TaskSchema,
  })
  .meta(component("WaitAnswer"));
