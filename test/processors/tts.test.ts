import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Env } from "../../src/env";
import { PermanentError } from "../../src/processors/errors";
import { REFERENCE_REGISTRY } from "../helpers";
import { MAX_TTS_ITEMS, MAX_TTS_TEXT_CHARS, ttsProcessor, type TtsPayload } from "../../src/plugins/tts/tts";
import { audioBytes } from "../../src/plugins/tts/tts-models";
import { fakeAi, testContext } from "./context";

const MELOTTS = "@cf/myshell-ai/melotts";
const AURA = "@cf/deepgram/aura-1";

/** Deterministic "audio" for a text: an MP3 frame header (bytes above 0x7f, so a lossy decode shows) + the text. */
function audioFor(text: string): Uint8Array {
  return new Uint8Array([0xff, 0xfb, 0x90, 0x00, ...new TextEncoder().encode(text)]);
}

function base64(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes));
}

/**
 * The only stand-in: the Workers AI binding at its boundary. melotts answers `{ audio: base64 }`, aura-1 a
 * ReadableStream in two chunks, as the real binding does. Calls are counted per text; it can fail on one.
 */
function ttsAi(options: { failOn?: string; onCall?: () => void } = {}) {
  const textOf = (inputs: Record<string, unknown>) => String(inputs.prompt ?? inputs.text);
  const { ai, calls } = fakeAi(({ model, inputs }) => {
    options.onCall?.();
    const text = textOf(inputs);
    if (text === options.failOn) throw new Error(`simulated crash on "${text}"`);
    const bytes = audioFor(text);
    if (model === MELOTTS) return { audio: base64(bytes) };
    return new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(bytes.slice(0, 3));
        controller.enqueue(bytes.slice(3));
        controller.close();
      },
    });
  });
  const callsFor = (text: string) => calls.filter((c) => textOf(c.inputs) === text).length;
  return { ai, calls, callsFor, failOn: (text?: string) => (options.failOn = text) };
}

function bindings(ai: Ai | undefined, model = MELOTTS): Partial<Env> {
  return { AI: ai, TTS_MODEL: model };
}

/** Where the test context stores a task's artifact in R2 (as production does). */
function artifactKey(taskId: string, name: string): string {
  return `tasks/${taskId}/${name}`;
}

function parse(payload: unknown): TtsPayload {
  return ttsProcessor.payload.parse(payload);
}

async function stored(taskId: string, name: string): Promise<{ bytes: Uint8Array; type?: string } | null> {
  const object = await env.ARTIFACTS.get(artifactKey(taskId, name));
  if (!object) return null;
  return { bytes: new Uint8Array(await object.arrayBuffer()), type: object.httpMetadata?.contentType };
}

describe("tts processor", () => {
  it("is registered as a built-in", () => {
    expect(REFERENCE_REGISTRY.get("tts")).toBe(ttsProcessor);
  });

  it("renders a single text to one MP3 artifact in R2 with the exact bytes", async () => {
    const fake = ttsAi();
    const { ctx, progress, checkpoints } = testContext({ type: "tts", env: bindings(fake.ai) });

    const result = await ttsProcessor.run(parse({ text: "Bonjour", lang: "fr" }), ctx);

    expect(fake.calls).toEqual([{ model: MELOTTS, inputs: { prompt: "Bonjour", lang: "fr" } }]);
    const expected = audioFor("Bonjour");
    expect(result).toEqual({
      model: MELOTTS,
      voice: null,
      format: "mp3",
      artifacts: [{ name: "item-0001.mp3", content_type: "audio/mpeg", size: expected.byteLength }],
      items: 1,
      resumed_from: 0,
    });
    const object = await stored(ctx.taskId, "item-0001.mp3");
    expect(object?.bytes).toEqual(expected);
    expect(object?.type).toBe("audio/mpeg");
    expect(progress).toEqual([{ percent: 100, message: "item 1/1" }]);
    expect(checkpoints).toEqual([{ done: (result as { artifacts: unknown[] }).artifacts }]);
  });

  it("renders items to one artifact each, checkpointing and reporting progress after each", async () => {
    const fake = ttsAi();
    const { ctx, progress, checkpoints } = testContext({ type: "tts", env: bindings(fake.ai) });

    const result = (await ttsProcessor.run(parse({ items: ["one", "two", { text: "three" }] }), ctx)) as {
      artifacts: Array<{ name: string }>;
    };

    expect(result.artifacts.map((a) => a.name)).toEqual(["item-0001.mp3", "item-0002.mp3", "item-0003.mp3"]);
    for (const [i, text] of ["one", "two", "three"].entries()) {
      expect((await stored(ctx.taskId, `item-000${i + 1}.mp3`))?.bytes).toEqual(audioFor(text));
    }
    expect(progress).toEqual([
      { percent: 33, message: "item 1/3" },
      { percent: 67, message: "item 2/3" },
      { percent: 100, message: "item 3/3" },
    ]);
    expect(checkpoints.map((c) => (c as { done: unknown[] }).done.length)).toEqual([1, 2, 3]);
    expect(checkpoints.at(-1)).toEqual({ done: result.artifacts });
  });

  it("resumes after a crash without synthesizing finished items again", async () => {
    const texts = ["t1", "t2", "t3", "t4", "t5"];
    const fake = ttsAi({ failOn: "t3" });
    const taskId = `task-${crypto.randomUUID()}`;
    const first = testContext({ type: "tts", taskId, env: bindings(fake.ai) });

    await expect(ttsProcessor.run(parse({ items: texts }), first.ctx)).rejects.toThrow('simulated crash on "t3"');
    expect(first.checkpoints.at(-1)).toMatchObject({
      done: [{ name: "item-0001.mp3" }, { name: "item-0002.mp3" }],
    });
    expect(await stored(taskId, "item-0003.mp3")).toBeNull();

    fake.failOn(undefined);
    const retry = testContext({
      taskId,
      env: bindings(fake.ai),
      attempt: 2,
      checkpoint: first.checkpoints.at(-1),
    });
    const result = (await ttsProcessor.run(parse({ items: texts }), retry.ctx)) as Record<string, unknown>;

    expect(texts.map((t) => fake.callsFor(t))).toEqual([1, 1, 2, 1, 1]);
    expect(result.resumed_from).toBe(2);
    expect(result.items).toBe(5);
    expect((result.artifacts as Array<{ name: string }>).map((a) => a.name)).toEqual(
      texts.map((_, i) => `item-000${i + 1}.mp3`),
    );
    for (const [i, text] of texts.entries()) {
      expect((await stored(taskId, `item-000${i + 1}.mp3`))?.bytes).toEqual(audioFor(text));
    }
    expect(retry.progress.map((p) => p.percent)).toEqual([60, 80, 100]);
  });

  it("redoes a checkpointed item whose artifact is missing or not as recorded", async () => {
    const texts = ["a", "b", "c"];
    const fake = ttsAi();
    const taskId = `task-${crypto.randomUUID()}`;
    const first = testContext({ type: "tts", taskId, env: bindings(fake.ai) });
    await ttsProcessor.run(parse({ items: texts }), first.ctx);

    await env.ARTIFACTS.delete(artifactKey(taskId, "item-0002.mp3"));
    await env.ARTIFACTS.put(artifactKey(taskId, "item-0003.mp3"), new Uint8Array([1]));
    const retry = testContext({ type: "tts", taskId, env: bindings(fake.ai), checkpoint: first.checkpoints.at(-1) });
    const result = (await ttsProcessor.run(parse({ items: texts }), retry.ctx)) as Record<string, unknown>;

    expect(texts.map((t) => fake.callsFor(t))).toEqual([1, 2, 2]);
    expect(result.resumed_from).toBe(1);
    expect((await stored(taskId, "item-0002.mp3"))?.bytes).toEqual(audioFor("b"));
    expect((await stored(taskId, "item-0003.mp3"))?.bytes).toEqual(audioFor("c"));
  });

  it("ignores a checkpoint it cannot read and renders everything", async () => {
    const fake = ttsAi();
    const { ctx } = testContext({ type: "tts", env: bindings(fake.ai), checkpoint: { done: "garbage" } });
    const result = (await ttsProcessor.run(parse({ items: ["x", "y"] }), ctx)) as Record<string, unknown>;
    expect(fake.calls).toHaveLength(2);
    expect(result.resumed_from).toBe(0);
  });

  it("stops between items when its signal is aborted", async () => {
    // The stand-in aborts the task's signal during the first call, as a cancel would mid-item.
    const holder: { abort?: AbortController } = {};
    const fake = ttsAi({ onCall: () => holder.abort?.abort(new Error("lease lost")) });
    const test = testContext({ type: "tts", env: bindings(fake.ai) });
    holder.abort = test.abort;

    await expect(ttsProcessor.run(parse({ items: ["p", "q", "r"] }), test.ctx)).rejects.toThrow(
      "tts stopped before item 2/3: lease lost",
    );
    expect(fake.calls).toHaveLength(1);
    expect(test.checkpoints).toHaveLength(1);
  });

  it("uses aura-1 with a voice and WAV, reading its stream output", async () => {
    const fake = ttsAi();
    const { ctx } = testContext({ type: "tts", env: bindings(fake.ai, AURA) });

    const result = (await ttsProcessor.run(
      parse({ items: ["hi", { text: "there", voice: "zeus" }], voice: "luna", format: "wav" }),
      ctx,
    )) as Record<string, unknown>;

    expect(fake.calls.map((c) => c.inputs)).toEqual([
      { text: "hi", speaker: "luna", encoding: "linear16", container: "wav" },
      { text: "there", speaker: "zeus", encoding: "linear16", container: "wav" },
    ]);
    expect(result).toMatchObject({ model: AURA, voice: "luna", format: "wav" });
    const object = await stored(ctx.taskId, "item-0002.wav");
    expect(object?.bytes).toEqual(audioFor("there"));
    expect(object?.type).toBe("audio/wav");
  });

  it("asks aura-1 for MP3 by default and reports its default voice", async () => {
    const fake = ttsAi();
    const { ctx } = testContext({ type: "tts", env: bindings(fake.ai, AURA) });
    const result = await ttsProcessor.run(parse({ text: "hello" }), ctx);
    expect(fake.calls[0]?.inputs).toEqual({ text: "hello", encoding: "mp3" });
    expect(result).toMatchObject({
      voice: "angus",
      artifacts: [{ name: "item-0001.mp3", content_type: "audio/mpeg" }],
    });
  });

  it("refuses what the model cannot do, naming the field, before any model call", async () => {
    const fake = ttsAi();
    const cases: Array<[string, Partial<Env>, unknown, RegExp]> = [
      ["wav on melotts", bindings(fake.ai), { text: "x", format: "wav" }, /^format: .*mp3 only, not wav/],
      ["voice on melotts", bindings(fake.ai), { text: "x", voice: "luna" }, /^voice: .* has no voices/],
      ["lang on aura", bindings(fake.ai, AURA), { text: "x", lang: "en" }, /^lang: /],
      [
        "unknown aura voice",
        bindings(fake.ai, AURA),
        { items: ["a", { text: "b", voice: "bob" }] },
        /^items\.1\.voice: /,
      ],
      ["unknown model", bindings(fake.ai, "@cf/some/model"), { text: "x" }, /TTS_MODEL @cf\/some\/model/],
    ];
    for (const [label, b, payload, message] of cases) {
      const { ctx } = testContext({ type: "tts", env: b });
      const run = ttsProcessor.run(parse(payload), ctx);
      await expect(run, label).rejects.toBeInstanceOf(PermanentError);
      await expect(run, label).rejects.toThrow(message);
      expect(await stored(ctx.taskId, "item-0001.mp3"), label).toBeNull();
    }
    expect(fake.calls).toHaveLength(0);
  });

  it("without the AI binding is unavailable and fails permanently", async () => {
    const { ctx } = testContext({ type: "tts", env: bindings(undefined) });
    const run = ttsProcessor.run(parse({ text: "x" }), ctx);
    await expect(run).rejects.toBeInstanceOf(PermanentError);
    await expect(run).rejects.toThrow("no AI binding: serve tts queues with a pull worker (edgeq worker --engine tts)");
    expect(ttsProcessor.engine!({ ...env, AI: undefined })).toEqual({
      name: `workers-ai (${MELOTTS})`,
      available: false,
      note: "no AI binding: serve tts queues with a pull worker (edgeq worker --engine tts)",
    });
  });

  it("reports its engine from TTS_MODEL, defaulting to melotts", () => {
    const ai = ttsAi().ai;
    expect(ttsProcessor.engine!({ ...env, AI: ai, TTS_MODEL: AURA })).toEqual({
      name: `workers-ai (${AURA})`,
      available: true,
    });
    expect(ttsProcessor.engine!({ ...env, AI: ai, TTS_MODEL: undefined })).toEqual({
      name: `workers-ai (${MELOTTS})`,
      available: true,
    });
    expect(ttsProcessor.engine!({ ...env, AI: ai, TTS_MODEL: "@cf/x/y" }).available).toBe(false);
  });
});

describe("tts payload", () => {
  const invalid: Array<[string, unknown, string]> = [
    ["both text and items", { text: "a", items: ["b"] }, "items"],
    ["neither text nor items", { voice: "luna" }, "text"],
    ["empty text", { text: "" }, "text"],
    ["blank text", { text: "   " }, "text"],
    ["empty items", { items: [] }, "items"],
    ["too many items", { items: Array.from({ length: MAX_TTS_ITEMS + 1 }, () => "x") }, "items"],
    ["text too long", { text: "x".repeat(MAX_TTS_TEXT_CHARS + 1) }, "text"],
    ["blank item", { items: ["ok", { text: " " }] }, "items.1.text"],
    ["unknown format", { text: "a", format: "ogg" }, "format"],
    ["unknown field", { text: "a", fromat: "wav" }, 'Unrecognized key: "fromat"'],
  ];
  for (const [label, payload, path] of invalid) {
    it(`rejects ${label}, naming the field`, () => {
      const parsed = ttsProcessor.payload.safeParse(payload);
      expect(parsed.success).toBe(false);
      // An unknown key has no path of its own: its message names it.
      expect(parsed.error?.issues.map((i) => i.path.join(".") || i.message)).toContain(path);
    });
  }

  it("accepts the largest allowed payload and defaults the format to mp3", () => {
    const items = Array.from({ length: MAX_TTS_ITEMS }, () => "x");
    expect(parse({ items }).format).toBe("mp3");
    expect(parse({ text: "x".repeat(MAX_TTS_TEXT_CHARS) }).text).toHaveLength(MAX_TTS_TEXT_CHARS);
  });
});

describe("tts model output", () => {
  const bytes = audioFor("out");

  it("reads every shape the binding may return", async () => {
    expect(await audioBytes({ audio: base64(bytes) })).toEqual(bytes);
    expect(await audioBytes(bytes.slice().buffer)).toEqual(bytes);
    expect(await audioBytes(bytes)).toEqual(bytes);
    expect(await audioBytes(new DataView(bytes.slice().buffer))).toEqual(bytes);
    expect(await audioBytes(new Response(bytes))).toEqual(bytes);
    expect(await audioBytes(new Response(bytes).body)).toEqual(bytes);
  });

  it("treats an HTTP error or empty audio as retryable, an unknown shape as permanent", async () => {
    const http = audioBytes(new Response("capacity exceeded", { status: 503 }));
    await expect(http).rejects.toThrow("the model answered HTTP 503: capacity exceeded");
    await expect(http).rejects.not.toBeInstanceOf(PermanentError);
    const empty = audioBytes({ audio: "" });
    await expect(empty).rejects.toThrow("no audio");
    await expect(empty).rejects.not.toBeInstanceOf(PermanentError);
    await expect(audioBytes({ text: "nope" })).rejects.toBeInstanceOf(PermanentError);
    await expect(audioBytes({ audio: "%%%" })).rejects.toBeInstanceOf(PermanentError);
  });
});
