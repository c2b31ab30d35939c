import * as z from "zod";
import { component } from "./component";
import { TaskKey } from "./fields";

/**
 * Flow control's configuration of a queue (docs/flow-control.md), the `flow` field of its config: limits
 * for every key (`default`) and for named keys (`keys`, each field replacing the default's), a rate for the
 * whole queue, and whether leases share out keys round-robin (`fair`). The engine reads it inside the lease
 * statement (src/engine/flow-lease.ts), so a change applies to the next lease.
 */

/** Most tasks of one key processing at once: past a thousand a key is no longer a limit worth a key. */
export const MAX_KEY_CONCURRENCY = 1000;
/** Most starts per period of a rate: the push queue's rate limit's bound, for one reason: a D1 database
 * serves ~1,000 statements a second, so a larger figure limits nothing. */
export const MAX_RATE_COUNT = 100_000;
/** Heaviest weight of a key's fair share: a key 100 times another's share is the most a round of one
 * lease (100 tasks) can express. */
export const MAX_KEY_WEIGHT = 100;
/** Most keys named in `keys`: the config is read inside every lease statement (as JSON), so it stays small;
 * a deployment with more special keys wants them in groups of its own queue. */
export const MAX_KEY_OVERRIDES = 100;

export const FlowRate = z
  .strictObject({
    count: z.number().int().min(1).max(MAX_RATE_COUNT),
    per: z.enum(["second", "minute"]),
    burst: z
      .number()
      .int()
      .min(1)
      .max(MAX_RATE_COUNT)
      .optional()
      .meta({ description: "most starts at once after a quiet spell (the bucket's size); default count" }),
  })
  .meta({
    ...component("FlowRate"),
    description: "a token bucket: count starts per second or minute, up to burst at once",
  });

export const FlowLimits = z
  .strictObject({
    concurrency: z.number().int().min(1).max(MAX_KEY_CONCURRENCY).nullable().optional().meta({
      description: "most tasks of the key processing at once; null: no limit",
    }),
    rate: FlowRate.nullable().optional().meta({ description: "the key's starts per period; null: no limit" }),
    ordered: z.boolean().optional().meta({
      description: "FIFO: the key's next task is not handed out until the one before it finished",
    }),
    weight: z.number().int().min(1).max(MAX_KEY_WEIGHT).optional().meta({
      description: "with fair shares, the key's tasks per round (default 1)",
    }),
  })
  .meta(component("FlowLimits"));

export const FlowConfigSchema = z
  .strictObject({
    default: FlowLimits.optional().meta({ ...FlowLimits.meta(), description: "the limits of every key" }),
    keys: z
      .record(TaskKey, FlowLimits)
      .refine((keys) => Object.keys(keys).length <= MAX_KEY_OVERRIDES, `at most ${MAX_KEY_OVERRIDES} keys`)
      .optional()
      .meta({ description: "named keys' limits; each field given replaces the default's" }),
    rate: FlowRate.nullable().optional().meta({ description: "the whole queue's starts per period" }),
    fair: z.boolean().optional().meta({
      description: "leases interleave keys round-robin at the same priority (weighted by each key's weight)",
    }),
  })
  .meta(component("FlowConfig"));

/** A queue's flow config, as stored (JSON in the queue's row) and read back. */
export type FlowConfig = z.infer<typeof FlowConfigSchema>;
export type FlowLimitsConfig = z.infer<typeof FlowLimits>;
