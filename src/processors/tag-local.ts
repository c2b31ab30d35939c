import { toString } from "nlcst-to-string";
import { retext } from "retext";
import retextKeywords from "retext-keywords";
import retextPos from "retext-pos";
import { normaliseTags, type ScoredTag } from "./tag-result";

/**
 * The local tagging engine, used when Workers AI is not bound: keywords and keyphrases found by
 * retext-keywords (nouns and capitalised adjectives, tagged by retext-pos, grouped by stem).
 * Pure JavaScript with no I/O, so it runs the same in workerd, Node and tests, and is deterministic.
 *
 * Scores: retext-keywords already scores each list relative to its best entry, and we keep that scale.
 * A keyword's score is its stem's occurrence count divided by the most frequent keyword's count; a
 * keyphrase's is (sum of its words' counts − 1) × its occurrences ÷ its length in words, rounded, divided
 * by the best keyphrase's. Both lists therefore lie in (0, 1] with their best entry at exactly 1, which
 * reads as "how relevant, relative to the most relevant term of this text". Scores are comparable within
 * one text, and across texts only loosely — which is what per-group calibration is for. A tag found both
 * as a keyword and as a one-word keyphrase keeps its higher score.
 */

/**
 * Tags `text` locally: up to `maxTags` keywords and keyphrases (lowercased), scores in 0..1, sorted by
 * score descending (ties by tag), deduplicated.
 *
 * @example
 * const tags = await localTags("Jazz piano recordings capture jazz at its best.", 5);
 * // [{ tag: "jazz", score: 1 }, ...]
 */
export async function localTags(text: string, maxTags: number): Promise<ScoredTag[]> {
  // Ask retext for `maxTags` of each list; ties can make it return a few more, normaliseTags cuts.
  const file = await retext().use(retextPos).use(retextKeywords, { maximum: maxTags }).process(text);
  const candidates: ScoredTag[] = [];
  for (const keyword of file.data.keywords ?? []) {
    const first = keyword.matches[0];
    if (first) candidates.push({ tag: toString(first.node), score: clampScore(keyword.score) });
  }
  for (const phrase of file.data.keyphrases ?? []) {
    const first = phrase.matches[0];
    if (first) candidates.push({ tag: toString(first.nodes), score: clampScore(phrase.score) });
  }
  return normaliseTags(candidates, maxTags);
}

/** retext's ratios are in (0, 1] by construction; this only guards the result's contract. */
function clampScore(score: number): number {
  return Number.isFinite(score) ? Math.min(1, Math.max(0, score)) : 0;
}
