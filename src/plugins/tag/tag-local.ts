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
 *
 * In short texts most terms occur once and retext scores them all 1, which would make every tag equal
 * and calibration useless. So the score is then weighted by where the term first appears — a term named
 * early is usually what the text is about (the position feature of keyword extractors such as YAKE):
 * score × (1 − POSITION_WEIGHT × first offset ÷ text length). The first term keeps its score; one named
 * only at the very end keeps half of it.
 */
const POSITION_WEIGHT = 0.5;

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
  const weight = (score: number, offsets: Array<number | undefined>) => {
    const first = Math.min(...offsets.map((o) => o ?? 0));
    return clampScore(score) * (1 - (POSITION_WEIGHT * first) / Math.max(1, text.length));
  };
  for (const keyword of file.data.keywords ?? []) {
    const first = keyword.matches[0];
    if (!first) continue;
    const offsets = keyword.matches.map((m) => m.node.position?.start.offset);
    candidates.push({ tag: toString(first.node), score: round(weight(keyword.score, offsets)) });
  }
  for (const phrase of file.data.keyphrases ?? []) {
    const first = phrase.matches[0];
    if (!first) continue;
    const offsets = phrase.matches.map((m) => m.nodes[0]?.position?.start.offset);
    candidates.push({ tag: toString(first.nodes), score: round(weight(phrase.score, offsets)) });
  }
  return normaliseTags(candidates, maxTags);
}

/** Three decimals: enough to rank and calibrate, short in the stored result. */
function round(score: number): number {
  return Math.round(score * 1000) / 1000;
}

/** retext's ratios are in (0, 1] by construction; this only guards the result's contract. */
function clampScore(score: number): number {
  return Number.isFinite(score) ? Math.min(1, Math.max(0, score)) : 0;
}
