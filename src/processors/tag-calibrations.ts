import { and, desc, eq, lt } from "drizzle-orm";
import { z } from "zod";
import type { Db } from "../db/client";
import { tagCalibrations, tasks } from "../db/schema";
import { storedTagResultSchema, type ScoredTag } from "./tag-result";

/**
 * Storage for tag calibration: reading a group's completed `tag` results, and getting and putting its
 * per-tag thresholds (one `tag_calibrations` row per group). Like the engine, every function takes the
 * database and, where it writes, the time, as parameters.
 */

/** Most completed `tag` results one calibration reads (the newest). The distribution of recent scores
 * is what matters, and it bounds the work: at ~50 tags per result, 1,000 results are ~100,000 scores. */
export const MAX_CALIBRATION_RESULTS = 1_000;

/** Results read per query. A result may be up to 256 KiB (any worker can complete a `tag` task), so
 * 100 per page keeps one page's memory under ~26 MB inside the 128 MB isolate. */
export const CALIBRATION_PAGE_SIZE = 100;

/** A stored thresholds object: tag -> minimum score kept. */
const thresholdsSchema = z.record(z.string(), z.number());

/** The tags of one completed `tag` result: kept and dropped alike. */
export type TagSample = ScoredTag[];

/**
 * The scored tags of a group's newest completed `tag` tasks (at most MAX_CALIBRATION_RESULTS), each
 * result's `tags` together with its `dropped`, so that thresholds in force when they ran do not bias a
 * new calibration. Results that are not tag results (not JSON of that shape) are skipped.
 *
 * @example
 * const samples = await readTagSamples(db, "library-1");
 */
export async function readTagSamples(db: Db, group: string, limit = MAX_CALIBRATION_RESULTS): Promise<TagSample[]> {
  const samples: TagSample[] = [];
  let before: string | null = null;
  while (samples.length < limit) {
    // Keyset paging on the primary key (newest first): each page resumes where the last one stopped.
    const page: { id: string; result: string | null }[] = await db
      .select({ id: tasks.id, result: tasks.result })
      .from(tasks)
      .where(
        and(
          eq(tasks.type, "tag"),
          eq(tasks.state, "completed"),
          eq(tasks.groupKey, group),
          before === null ? undefined : lt(tasks.id, before),
        ),
      )
      .orderBy(desc(tasks.id))
      .limit(CALIBRATION_PAGE_SIZE);
    for (const row of page) {
      const sample = parseSample(row.result);
      if (sample && samples.length < limit) samples.push(sample);
    }
    if (page.length < CALIBRATION_PAGE_SIZE) break;
    before = page[page.length - 1]!.id;
  }
  return samples;
}

function parseSample(result: string | null): TagSample | null {
  if (result === null) return null;
  let json: unknown;
  try {
    json = JSON.parse(result);
  } catch {
    return null;
  }
  const parsed = storedTagResultSchema.safeParse(json);
  if (!parsed.success) return null;
  return [...parsed.data.tags, ...parsed.data.dropped];
}

/**
 * A group's thresholds (tag -> minimum score kept), or null when the group was never calibrated.
 *
 * @example
 * const thresholds = await getThresholds(db, "library-1"); // { jazz: 0.5 } or null
 */
export async function getThresholds(db: Db, group: string): Promise<Record<string, number> | null> {
  const row = await db
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
 * Stores a group's thresholds, replacing any earlier calibration (one row per group).
 *
 * @example
 * await putThresholds(db, "library-1", { jazz: 0.5 }, 12, Date.now());
 */
export async function putThresholds(
  db: Db,
  group: string,
  thresholds: Readonly<Record<string, number>>,
  samples: number,
  now: number,
): Promise<void> {
  const values = { thresholds: JSON.stringify(thresholds), samples, updatedAt: now };
  await db
    .insert(tagCalibrations)
    .values({ groupKey: group, ...values })
    .onConflictDoUpdate({ target: tagCalibrations.groupKey, set: values });
}
