import { z } from "zod";
import { MAX_BATCH, MAX_VISIBILITY_TIMEOUT_S, MAX_WAIT_S, MIN_VISIBILITY_TIMEOUT_S } from "../engine/limits";

/** A long-poll lease request, as the coordinator accepts it (validated again at this boundary). */
export const coordinatorLeaseSchema = z.object({
  queue: z.string().min(1),
  max: z.number().int().min(1).max(MAX_BATCH),
  visibilityTimeoutS: z.number().int().min(MIN_VISIBILITY_TIMEOUT_S).max(MAX_VISIBILITY_TIMEOUT_S),
  holder: z.string().nullable(),
  waitMs: z
    .number()
    .int()
    .min(0)
    .max(MAX_WAIT_S * 1000),
});
export type CoordinatorLease = z.infer<typeof coordinatorLeaseSchema>;

/** Tells the coordinator that tasks of its queue become due at `runAt` (ms). */
export const coordinatorNotifySchema = z.object({
  queue: z.string().min(1),
  runAt: z.number().int(),
});
export type CoordinatorNotify = z.infer<typeof coordinatorNotifySchema>;
