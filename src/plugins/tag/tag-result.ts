import * as z from "zod";

/**
 * The shapes shared by the `tag` processor (which writes them) and `calibrate` (which reads them back
 * from completed tasks), and the pure helpers both use: tag normalisation and threshold filtering.
 */

/** One tag with its score in 0..1 (higher is more relevant). */
export interface ScoredTag {
  tag: string;
  score: number;
}

/** A tag removed by a group's calibration: its score fell below `threshold`. */
export interface DroppedTag extends ScoredTag {
  threshold: number;
}

/** What a `tag` task completes with. */
export interface TagResult {
  engine: "workers-ai" | "local";
  /** The Workers AI model (workers-ai engine only). */
  model?: string;
  /** Kept tags, by score descending. */
  tags: ScoredTag[];
  concepts?: string[];
  themes?: string[];
  /** Present and true only when the text was cut to fit the model's context window. */
  truncated?: boolean;
  /** Tags the group's calibration removed, by score descending. */
  dropped: DroppedTag[];
  /** Whether a calibration of the task's group was found and applied. */
  calibrated: boolean;
}

/** Longest tag kept, in characters. A "tag" longer than this is a sentence the model emitted by mistake,
 * and every tag is stored in each result and in the group's calibration row. */
export const MAX_TAG_CHARS = 100;

/**
 * A stored `tag` result as `calibrate` reads it: only the fields it needs, validated, because any worker
 * may complete a task of type `tag` with anything.
 */
export const storedTagResultSchema = z.object({
  tags: z.array(z.object({ tag: z.string(), score: z.number().min(0).max(1) })),
  dropped: z.array(z.object({ tag: z.string(), score: z.number().min(0).max(1) })).default([]),
});

/** Lowercases, trims and collapses inner whitespace; "" means "not a tag". */
export function normaliseTag(tag: string): string {
  const normal = tag.toLowerCase().replace(/\s+/g, " ").trim();
  return normal.length > MAX_TAG_CHARS ? "" : normal;
}

/** Score descending, then tag ascending: a total order, so equal inputs always give equal outputs. */
export function byScoreThenTag(a: ScoredTag, b: ScoredTag): number {
  return b.score - a.score || (a.tag < b.tag ? -1 : a.tag > b.tag ? 1 : 0);
}

/**
 * Normalises tags (see `normaliseTag`), drops empty ones, keeps the highest score of duplicates, sorts by
 * score descending (ties by tag) and keeps the first `max`.
 *
 * @example
 * normaliseTags([{ tag: " Jazz ", score: 0.4 }, { tag: "jazz", score: 0.9 }], 10); // [{ tag: "jazz", score: 0.9 }]
 */
export function normaliseTags(tags: readonly ScoredTag[], max: number): ScoredTag[] {
  const best = new Map<string, number>();
  for (const { tag, score } of tags) {
    const key = normaliseTag(tag);
    if (key === "") continue;
    const seen = best.get(key);
    if (seen === undefined || score > seen) best.set(key, score);
  }
  return [...best]
    .map(([tag, score]) => ({ tag, score }))
    .sort(byScoreThenTag)
    .slice(0, max);
}

/**
 * Splits tags by a group's thresholds: a tag scoring below its threshold is dropped; a tag with no
 * threshold is kept. Order is preserved.
 *
 * @example
 * applyThresholds([{ tag: "jazz", score: 0.2 }], { jazz: 0.5 }); // { kept: [], dropped: [{ tag: "jazz", score: 0.2, threshold: 0.5 }] }
 */
export function applyThresholds(
  tags: readonly ScoredTag[],
  thresholds: Readonly<Record<string, number>>,
): { kept: ScoredTag[]; dropped: DroppedTag[] } {
  const kept: ScoredTag[] = [];
  const dropped: DroppedTag[] = [];
  for (const tag of tags) {
    const threshold = Object.hasOwn(thresholds, tag.tag) ? thresholds[tag.tag] : undefined;
    if (threshold !== undefined && tag.score < threshold) dropped.push({ ...tag, threshold });
    else kept.push(tag);
  }
  return { kept, dropped };
}
