import * as z from "zod";
import { normaliseTags, type ScoredTag } from "./tag-result";

/**
 * The Workers AI tagging engine: a text-generation model is asked for JSON only, and its reply is parsed
 * and validated before anything is used. A reply that is not JSON, or not the JSON asked for, is a
 * retryable failure (a new generation may well succeed); nothing from it is stored.
 */

/** The model used when TAG_MODEL is unset. */
export const DEFAULT_TAG_MODEL = "@cf/meta/llama-3.1-8b-instruct";

/** Most characters of text sent to the model. llama-3.1-8b-instruct on Workers AI has a 7,968-token
 * context window; 16,000 characters of English is about 4,000 tokens, leaving room for the instructions
 * and MAX_OUTPUT_TOKENS of reply. Longer texts are tagged from their beginning (`truncated: true`). */
export const MAX_MODEL_INPUT_CHARS = 16_000;

/** Reply budget in tokens. Workers AI defaults to 256, which cuts a 50-tag reply mid-JSON; one tag costs
 * about 15 tokens, so 1,536 fits 50 tags plus concepts and themes. */
export const MAX_OUTPUT_TOKENS = 1_536;

/** Most concepts or themes kept from a reply: they are summaries, and a long list is the model rambling. */
export const MAX_CONCEPTS = 20;

/** Longest concept or theme kept, in characters: a label, not a paragraph (longer ones are dropped). */
export const MAX_CONCEPT_CHARS = 200;

/** The narrow slice of the AI binding this engine uses: the model name is a runtime setting, which the
 * binding's typed overloads cannot express. */
export interface TextGenerator {
  run(model: string, inputs: Record<string, unknown>): Promise<unknown>;
}

/** What the model must reply with. Concepts and themes may be omitted (read as empty). */
const modelReplySchema = z.object({
  tags: z.array(z.object({ tag: z.string(), confidence: z.number().min(0).max(1) })),
  concepts: z.array(z.string()).default([]),
  themes: z.array(z.string()).default([]),
});

export interface AiTags {
  tags: ScoredTag[];
  concepts: string[];
  themes: string[];
  truncated: boolean;
}

/** The instructions. They ask for JSON only, in the exact shape modelReplySchema checks. */
export function tagPrompt(maxTags: number): string {
  return [
    "You tag documents. Reply with JSON only: no prose, no code fences, nothing before or after the JSON.",
    'The JSON must have exactly this shape: {"tags": [{"tag": string, "confidence": number from 0 to 1}],',
    '"concepts": [string], "themes": [string]}.',
    `Give at most ${maxTags} tags: short lowercase keywords or keyphrases (1 to 3 words) that describe the text,`,
    "with confidence = how sure you are the tag applies. Concepts are the main ideas the text discusses;",
    "themes are its broader subjects. Write everything in the language of the text.",
  ].join("\n");
}

/**
 * Tags `text` with a Workers AI text-generation model.
 *
 * @throws Error "model returned malformed JSON: ..." when the reply is not the JSON asked for (retryable).
 * @example
 * const { tags } = await aiTags(env.AI as unknown as TextGenerator, DEFAULT_TAG_MODEL, "Jazz piano...", 10);
 */
export async function aiTags(ai: TextGenerator, model: string, text: string, maxTags: number): Promise<AiTags> {
  const truncated = text.length > MAX_MODEL_INPUT_CHARS;
  const input = truncated ? text.slice(0, MAX_MODEL_INPUT_CHARS) : text;
  const output = await ai.run(model, {
    messages: [
      { role: "system", content: tagPrompt(maxTags) },
      { role: "user", content: input },
    ],
    max_tokens: MAX_OUTPUT_TOKENS,
    // The most likely tags, not creative ones: the same text should get the same tags.
    temperature: 0,
  });
  const reply = parseReply(output);
  return {
    tags: normaliseTags(
      reply.tags.map((t) => ({ tag: t.tag, score: t.confidence })),
      maxTags,
    ),
    concepts: cleanList(reply.concepts),
    themes: cleanList(reply.themes),
    truncated,
  };
}

/** Validates the model's output: `{ response: "<json>" }`, or `{ response: {...} }` in JSON mode. */
export function parseReply(output: unknown): z.infer<typeof modelReplySchema> {
  const response = typeof output === "object" && output !== null ? (output as { response?: unknown }).response : null;
  let value: unknown = response;
  if (typeof response === "string") value = parseJsonText(response);
  else if (typeof response !== "object" || response === null) {
    throw new Error(`model returned malformed JSON: expected { response: string | object }, got ${describe(output)}`);
  }
  const parsed = modelReplySchema.safeParse(value);
  if (!parsed.success) {
    const issues = parsed.error.issues.slice(0, 3).map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`);
    throw new Error(`model returned malformed JSON: not the requested shape (${issues.join("; ")})`);
  }
  return parsed.data;
}

/** The JSON object in a reply, tolerating a code fence or a sentence around it. */
function parseJsonText(reply: string): unknown {
  const start = reply.indexOf("{");
  const end = reply.lastIndexOf("}");
  if (start === -1 || end < start) {
    throw new Error(`model returned malformed JSON: no JSON object in the reply ${describe(reply)}`);
  }
  try {
    return JSON.parse(reply.slice(start, end + 1));
  } catch (error) {
    throw new Error(`model returned malformed JSON: ${(error as Error).message} in the reply ${describe(reply)}`, {
      cause: error,
    });
  }
}

/** Trimmed, non-empty, deduplicated case-insensitively (first spelling wins), at most MAX_CONCEPTS. */
function cleanList(items: readonly string[]): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const item of items) {
    const value = item.replace(/\s+/g, " ").trim();
    const key = value.toLowerCase();
    if (value === "" || value.length > MAX_CONCEPT_CHARS || seen.has(key)) continue;
    seen.add(key);
    out.push(value);
    if (out.length === MAX_CONCEPTS) break;
  }
  return out;
}

/** A short quote of a value for an error message (the task's error history keeps it). */
function describe(value: unknown): string {
  const text = typeof value === "string" ? value : JSON.stringify(value);
  return JSON.stringify((text ?? String(value)).slice(0, 120));
}
