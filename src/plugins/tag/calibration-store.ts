import { eq } from "drizzle-orm";
import { drizzle } from "drizzle-orm/d1";
import * as z from "zod";
import { tagCalibrations } from "./schema";

/**
 * A group's tag thresholds (tag -> minimum score kept): one `tag_calibrations` row per group, written by
 * the `calibrate` processor and read by `tag` (both through their ProcessorContext).
 */

/** A stored thresholds object: tag -> minimum score kept. */
const thresholdsSchema = z.record(z.string(), z.number());

/**
 * A group's thresholds, or null when the group was never calibrated.
 *
 * @example
 * const thresholds = await getThresholds(env.DB, "library-1"); // { jazz: 0.5 } or null
 */
export async function getThresholds(d1: D1Database, group: string): Promise<Record<string, number> | null> {
  const row = await drizzle(d1)
    .select({ thresholds: tagCalibrations.thresholds })
    .from(tagCalibrations)
    .where(eq(tagCalibrations.groupKey, group))
    .get();
  if (!row) return null;
  let json: unknown;
  try {
    json = JSON.parse(row.thresholds);
  } catch {
    json = undefined;
  }
  const parsed = thresholdsSchema.safeParse(json);
  // Only `putThresholds` writes this row; a bad one is a bug, so fail (retryably) rather than guess.
  if (!parsed.success) throw new Error(`tag_calibrations row of group "${group}" holds invalid thresholds`);
  return parsed.data;
}

/**
 * Stores a group's thresholds, learnt from `samples` results, replacing any earlier calibration (one row
 * per group).
 *
 * @example
 * await putThresholds(env.DB, "library-1", { jazz: 0.5 }, 12, Date.now());
 */
export async function putThresholds(
  d1: D1Database,
  group: string,
  thresholds: Readonly<Record<string, number>>,
  samples: number,
  now: number,
): Promise<void> {
  const values = { thresholds: JSON.stringify(thresholds), samples, updatedAt: now };
  await drizzle(d1)
    .insert(tagCalibrations)
    .values({ groupKey: group, ...values })
    .onConflictDoUpdate({ target: tagCalibrations.groupKey, set: values });
}
