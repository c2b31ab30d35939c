import { z } from "zod";
import {
  MAX_BATCH,
  MAX_PARTITIONS,
  MAX_VISIBILITY_TIMEOUT_S,
  MAX_WAIT_S,
  MIN_VISIBILITY_TIMEOUT_S,
} from "../engine/limits";

/** A long-poll lease request, as the coordinator accepts it (validated again at this boundary). */
export const coordinatorLeaseSchema = z.object({
  queue: z.string().min(1),
  max: z.number().int().min(1).max(MAX_BATCH),
  /** null: the queue's configured visibility timeout. */
  visibilityTimeoutS: z.number().int().min(MIN_VISIBILITY_TIMEOUT_S).max(MAX_VISIBILITY_TIMEOUT_S).nullable(),
  holder: z.string().nullable(),
  waitMs: z
    .number()
    .int()
    .min(0)
    .max(MAX_WAIT_S * 1000),
  /** Names the wait so the caller can withdraw it (`forget`) when its client disconnects. */
  waiterId: z.string().min(1).max(64).optional(),
  /** The partition this coordinator serves (src/shards/); it leases from its own first, then the others. */
  part: z.number().int().min(0).max(MAX_PARTITIONS).default(0),
});
export type CoordinatorLease = z.infer<typeof coordinatorLeaseSchema>;
/** What a caller sends (`part` may be left out: partition 0). */
export type CoordinatorLeaseInput = z.input<typeof coordinatorLeaseSchema>;

/** Withdraws a waiting long poll whose client went away. */
export const coordinatorForgetSchema = z.object({ waiterId: z.string().min(1).max(64) });
export type CoordinatorForget = z.infer<typeof coordinatorForgetSchema>;

/** Tells the coordinator that tasks of its queue become due at `runAt` (ms). */
export const coordinatorNotifySchema = z.object({
  queue: z.string().min(1),
  runAt: z.number().int(),
  part: z.number().int().min(0).max(MAX_PARTITIONS).default(0),
});
export type CoordinatorNotify = z.input<typeof coordinatorNotifySchema>;

/** armSchedules: the time (ms) the schedules' alarm must fire by. */
export const scheduleArmSchema = z.object({ at: z.number().int().nonnegative() });
