import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { PermanentError, RetryAfterError } from "../../src/processors/errors";
import { REFERENCE_REGISTRY } from "../helpers";
import { DEFAULT_TAG_MODEL, MAX_MODEL_INPUT_CHARS } from "../../src/plugins/tag/tag-ai";
import { putThresholds } from "../../src/plugins/tag/calibration-store";
import type { TagResult } from "../../src/plugins/tag/tag-result";
import { MAX_TAG_TEXT_CHARS, tagProcessor } from "../../src/plugins/tag/tag";
import { T0 } from "../helpers";
import { fakeAi, testContext } from "./context";

const JAZZ = [
  "Jazz piano recordings from the 1950s capture a golden era of the music.",
  "The piano trio led by Bill Evans redefined jazz improvisation, and its recordings are still studied.",
  "Collectors hunt for original vinyl pressings of these jazz sessions, and new piano students transcribe",
  "the solos note by note to learn how jazz harmony moves.",
].join(" ");

/** Runs `tag` as the dispatcher would: payload validated by the processor's schema first. */
async function tag(payload: unknown, options: Parameters<typeof testContext>[0] = {}): Promise<TagResult> {
  const { ctx } = testContext({ type: "tag", ...options });
  return (await tagProcessor.run(tagProcessor.payload.parse(payload), ctx)) as TagResult;
}

/** An AI stand-in that replies `reply` (a string is the model's text, anything else the whole output). */
function modelReplying(reply: unknown) {
  return fakeAi(() => (typeof reply === "string" ? { response: reply } : reply));
}

function expectSortedScores(tags: { score: number }[]): void {
  for (const t of tags) {
    expect(t.score).toBeGreaterThanOrEqual(0);
    expect(t.score).toBeLessThanOrEqual(1);
  }
  const scores = tags.map((t) => t.score);
  expect(scores).toEqual([...scores].sort((a, b) => b - a));
}

describe("tag: registration and payload", () => {
  it("is registered and names its engine from the bindings", () => {
    expect(REFERENCE_REGISTRY.get("tag")).toBe(tagProcessor);
    expect(tagProcessor.engine!({ ...env, AI: undefined })).toEqual({
      name: "local (retext-keywords)",
      available: true,
    });
    const ai = modelReplying("{}").ai;
    expect(tagProcessor.engine!({ ...env, AI: ai, TAG_MODEL: "@cf/x/y" })).toEqual({
      name: "workers-ai (@cf/x/y)",
      available: true,
    });
    expect(tagProcessor.engine!({ ...env, AI: ai, TAG_MODEL: undefined }).name).toBe(
      `workers-ai (${DEFAULT_TAG_MODEL})`,
    );
  });

  it("defaults max_tags to 10 and rejects empty or oversized text and out-of-range max_tags", () => {
    expect(tagProcessor.payload.parse({ text: "a" })).toEqual({ text: "a", max_tags: 10 });
    expect(tagProcessor.payload.parse({ text: "x".repeat(MAX_TAG_TEXT_CHARS), max_tags: 50 }).max_tags).toBe(50);
    for (const bad of [
      {},
      { text: "" },
      { text: "x".repeat(MAX_TAG_TEXT_CHARS + 1) },
      { text: "a", max_tags: 0 },
      { text: "a", max_tags: 51 },
      { text: "a", max_tags: 2.5 },
      { text: 42 },
    ]) {
      expect(tagProcessor.payload.safeParse(bad).success, JSON.stringify(bad).slice(0, 60)).toBe(false);
    }
  });
});

describe("tag: local engine (no AI binding)", () => {
  const local = { env: { AI: undefined } };

  it("tags a paragraph about jazz piano with its subject, scores in 0..1 sorted descending", async () => {
    const result = await tag({ text: JAZZ }, local);
    expect(result).toMatchObject({ engine: "local", dropped: [], calibrated: false });
    expect(result.model).toBeUndefined();
    const tags = result.tags.map((t) => t.tag);
    expect(tags[0]).toBe("jazz"); // the most frequent noun scores 1
    expect(result.tags[0]!.score).toBe(1);
    expect(tags).toContain("piano");
    expect(tags.some((t) => t.includes(" "))).toBe(true); // keyphrases, not only words
    expect(tags).not.toContain("the");
    for (const t of tags) expect(t).toBe(t.toLowerCase().trim());
    expect(new Set(tags).size).toBe(tags.length);
    expect(tags.length).toBeLessThanOrEqual(10);
    expectSortedScores(result.tags);
  });

  it("respects max_tags and is deterministic", async () => {
    const three = await tag({ text: JAZZ, max_tags: 3 }, local);
    expect(three.tags).toHaveLength(3);
    const ten = await tag({ text: JAZZ, max_tags: 10 }, local);
    expect(ten.tags).toHaveLength(10); // the paragraph has more than ten candidates
    expect(ten.tags.slice(0, 3)).toEqual(three.tags); // the best three, whatever the cap
    expect(await tag({ text: JAZZ, max_tags: 3 }, local)).toEqual(three);
  });

  it("returns no tags for a text without nouns, rather than failing", async () => {
    const result = await tag({ text: "!!! ... ???" }, local);
    expect(result.tags).toEqual([]);
  });

  it("stops when the task is cancelled", async () => {
    const { ctx, abort } = testContext({ type: "tag", env: { AI: undefined } });
    abort.abort(new Error("cancelled"));
    await expect(tagProcessor.run(tagProcessor.payload.parse({ text: JAZZ }), ctx)).rejects.toThrow("cancelled");
  });
});

describe("tag: Workers AI engine", () => {
  const reply = {
    tags: [
      { tag: "Jazz", confidence: 0.6 },
      { tag: " piano  trio ", confidence: 0.9 },
      { tag: "jazz", confidence: 0.95 },
      { tag: "vinyl", confidence: 0.2 },
      { tag: "   ", confidence: 0.99 },
    ],
    concepts: ["improvisation", " Improvisation ", "harmony"],
    themes: ["music history"],
  };

  it("asks TAG_MODEL for JSON only and normalises the validated reply", async () => {
    const fake = modelReplying(JSON.stringify(reply));
    const result = await tag({ text: JAZZ, max_tags: 2 }, { env: { AI: fake.ai, TAG_MODEL: "@cf/test/tagger" } });
    expect(fake.calls).toHaveLength(1);
    const call = fake.calls[0]!;
    expect(call.model).toBe("@cf/test/tagger");
    const messages = call.inputs.messages as { role: string; content: string }[];
    expect(messages.map((m) => m.role)).toEqual(["system", "user"]);
    expect(messages[0]!.content).toMatch(/Reply with JSON only/);
    expect(messages[0]!.content).toMatch(/at most 2 tags/);
    expect(messages[1]!.content).toBe(JAZZ);
    expect(call.inputs.max_tokens).toBeGreaterThan(256); // Workers AI's default would cut the JSON
    expect(result).toEqual({
      engine: "workers-ai",
      model: "@cf/test/tagger",
      // lowercased, trimmed, whitespace collapsed, duplicates keep their best score, blanks gone, top 2
      tags: [
        { tag: "jazz", score: 0.95 },
        { tag: "piano trio", score: 0.9 },
      ],
      concepts: ["improvisation", "harmony"],
      themes: ["music history"],
      dropped: [],
      calibrated: false,
    });
  });

  it("uses the default model when TAG_MODEL is unset", async () => {
    const fake = modelReplying(JSON.stringify(reply));
    const result = await tag({ text: JAZZ }, { env: { AI: fake.ai, TAG_MODEL: undefined } });
    expect(fake.calls[0]!.model).toBe(DEFAULT_TAG_MODEL);
    expect(result.model).toBe(DEFAULT_TAG_MODEL);
  });

  it("does not call the model for a task already cancelled", async () => {
    const fake = modelReplying('{"tags": []}');
    const { ctx, abort } = testContext({ type: "tag", env: { AI: fake.ai } });
    abort.abort(new Error("cancelled"));
    await expect(tagProcessor.run(tagProcessor.payload.parse({ text: JAZZ }), ctx)).rejects.toThrow("cancelled");
    expect(fake.calls).toEqual([]);
  });

  it("accepts JSON wrapped in a code fence, and an object reply (JSON mode)", async () => {
    const fenced = modelReplying("Here you go:\n```json\n" + JSON.stringify(reply) + "\n```");
    const object = modelReplying({ response: reply });
    for (const fake of [fenced, object]) {
      const result = await tag({ text: JAZZ }, { env: { AI: fake.ai } });
      expect(result.tags.map((t) => t.tag)).toEqual(["jazz", "piano trio", "vinyl"]);
    }
  });

  it("sends at most MAX_MODEL_INPUT_CHARS of text and says when it cut", async () => {
    const fake = modelReplying(JSON.stringify(reply));
    const long = "word ".repeat(MAX_MODEL_INPUT_CHARS / 4);
    const result = await tag({ text: long }, { env: { AI: fake.ai } });
    const messages = fake.calls[0]!.inputs.messages as { content: string }[];
    expect(messages[1]!.content).toBe(long.slice(0, MAX_MODEL_INPUT_CHARS));
    expect(result.truncated).toBe(true);
    expect((await tag({ text: JAZZ }, { env: { AI: fake.ai } })).truncated).toBeUndefined();
  });

  const malformed: [string, unknown, RegExp][] = [
    ["prose instead of JSON", "Sure! Tags: jazz, piano", /no JSON object/],
    ["truncated JSON", '{"tags": [{"tag": "jazz", "confidence": 0.9}, {"tag": "pia', /no JSON object|JSON/],
    ["broken JSON", '{"tags": [{"tag": "jazz", "confidence": 0.9},]}', /malformed JSON: .*JSON/],
    ["a confidence above 1", JSON.stringify({ tags: [{ tag: "jazz", confidence: 1.5 }] }), /tags\.0\.confidence/],
    ["no tags array", JSON.stringify({ concepts: ["jazz"] }), /not the requested shape \(tags:/],
    ["a tag that is not a string", JSON.stringify({ tags: [{ tag: 7, confidence: 0.5 }] }), /tags\.0\.tag/],
    ["no response at all", {}, /expected \{ response/],
  ];
  for (const [label, output, message] of malformed) {
    it(`fails retryably, storing nothing, when the model returns ${label}`, async () => {
      const group = `g-malformed-${Math.random()}`;
      await putThresholds(env.DB, group, { jazz: 0.1 }, 3, T0);
      const fake = modelReplying(output);
      const { ctx } = testContext({ type: "tag", group, env: { AI: fake.ai } });
      const error: unknown = await tagProcessor.run(tagProcessor.payload.parse({ text: JAZZ }), ctx).then(
        () => null,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(Error);
      expect(error).not.toBeInstanceOf(PermanentError); // retryable: a new generation may be valid
      expect(error).not.toBeInstanceOf(RetryAfterError);
      expect((error as Error).message).toMatch(/^model returned malformed JSON: /);
      expect((error as Error).message).toMatch(message);
      const listed = await env.ARTIFACTS.list({ prefix: `tasks/${ctx.taskId}/` });
      expect(listed.objects).toEqual([]);
      const row = await env.DB.prepare("SELECT thresholds, samples FROM tag_calibrations WHERE group_key = ?")
        .bind(group)
        .first();
      expect(row).toEqual({ thresholds: '{"jazz":0.1}', samples: 3 });
    });
  }
});

describe("tag: calibration of the task's group", () => {
  const scored = JSON.stringify({
    tags: [
      { tag: "jazz", confidence: 0.55 },
      { tag: "piano", confidence: 0.5 },
      { tag: "vinyl", confidence: 0.2 },
    ],
  });

  it("drops tags scoring below their threshold, keeps those at or above it and those without one", async () => {
    const group = `g-cal-${Math.random()}`;
    await putThresholds(env.DB, group, { jazz: 0.6, piano: 0.5, "bill evans": 0.9 }, 4, T0);
    const fake = modelReplying(scored);
    const result = await tag({ text: JAZZ }, { group, env: { AI: fake.ai } });
    expect(result.calibrated).toBe(true);
    expect(result.tags).toEqual([
      { tag: "piano", score: 0.5 },
      { tag: "vinyl", score: 0.2 },
    ]);
    expect(result.dropped).toEqual([{ tag: "jazz", score: 0.55, threshold: 0.6 }]);
  });

  it("keeps everything for a group without calibration, or a task without a group", async () => {
    const fake = modelReplying(scored);
    for (const group of [`g-none-${Math.random()}`, null]) {
      const result = await tag({ text: JAZZ }, { group, env: { AI: fake.ai } });
      expect(result.calibrated).toBe(false);
      expect(result.dropped).toEqual([]);
      expect(result.tags.map((t) => t.tag)).toEqual(["jazz", "piano", "vinyl"]);
    }
  });

  it("does not read another group's calibration", async () => {
    const group = `g-other-${Math.random()}`;
    await putThresholds(env.DB, `${group}-x`, { jazz: 0.99, piano: 0.99, vinyl: 0.99 }, 3, T0);
    const result = await tag({ text: JAZZ }, { group, env: { AI: modelReplying(scored).ai } });
    expect(result.tags).toHaveLength(3);
    expect(result.calibrated).toBe(false);
  });
});
