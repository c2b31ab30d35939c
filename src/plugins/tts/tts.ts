import * as z from "zod";
import { PermanentError } from "../../processors/errors";
import { adapterFor, audioBytes, CONTENT_TYPES, KNOWN_MODELS, type TtsAdapter, type TtsFormat } from "./tts-models";
import type { ArtifactInfo } from "../../storage/artifacts";
import type { Processor, ProcessorContext, ProcessorEnv } from "../../processors/types";

/** The model used when TTS_MODEL is unset: multilingual, and priced per audio minute ($0.0002) rather than
 * per 1k characters like aura-1 ($0.015), so long texts cost far less. */
export const DEFAULT_TTS_MODEL = "@cf/myshell-ai/melotts";

/** Most items per task. Each item is one model call plus two fenced heartbeats (checkpoint, progress), and
 * the result and checkpoint list every artifact: 500 keeps both near 40 KB, far below the engine's 256 KiB
 * result limit. An attempt that hits the dispatcher's run deadline resumes from its checkpoint on retry.
 * Larger jobs are several tasks. */
export const MAX_TTS_ITEMS = 500;

/** Longest text per item, in characters. About two minutes of speech: ~1-2 MB of MP3 or ~6 MB of WAV,
 * held in memory (twice, while decoding base64) inside a coordinator that runs up to 50 push tasks in
 * 128 MB. Longer texts belong in several items, so a failure redoes (and pays for) only one of them. */
export const MAX_TTS_TEXT_CHARS = 2_000;

/** Longest voice or language name: real ones are a few characters; this only stops junk early. */
const MAX_NAME_CHARS = 64;

const NO_AI = "no AI binding: serve tts queues with a pull worker (edgeq worker --engine tts)";

const text = z
  .string()
  .max(MAX_TTS_TEXT_CHARS)
  .refine((s) => s.trim().length > 0, "must not be empty or blank");
const name = z.string().min(1).max(MAX_NAME_CHARS);

/**
 * The `tts` payload schema, shared with the CLI's espeak-ng engine (cli/runner/tts-payload.ts), which
 * differs only in its default format: what its engine makes natively.
 *
 * @example
 * ttsPayloadSchema("wav").parse({ text: "hello" }); // { text: "hello", format: "wav" }
 */
export function ttsPayloadSchema(defaultFormat: "mp3" | "wav") {
  return z
    .strictObject({
      text: text.optional(),
      items: z
        .array(z.union([text, z.strictObject({ text, voice: name.optional() })]))
        .min(1)
        .max(MAX_TTS_ITEMS)
        .optional(),
      voice: name.optional(),
      format: z.enum(["mp3", "wav"]).default(defaultFormat),
      lang: name.optional(),
    })
    .superRefine((p, ctx) => {
      if ((p.text === undefined) === (p.items === undefined)) {
        ctx.addIssue({
          code: "custom",
          path: [p.text === undefined ? "text" : "items"],
          message: "give exactly one of text or items",
        });
      }
    });
}

const payloadSchema = ttsPayloadSchema("mp3");

/** The `tts` payload: exactly one of `text` or `items`, plus optional voice, format and lang. */
export type TtsPayload = z.infer<typeof payloadSchema>;

/** The checkpoint an attempt saves after each item: every artifact finished so far. */
const checkpointSchema = z.object({
  done: z.array(z.object({ name: z.string(), content_type: z.string(), size: z.number() })),
});

/** The AI binding as this processor calls it: its typed overloads are keyed on literal model ids, while
 * the model here is a runtime setting (TTS_MODEL), and the output shape is checked by audioBytes. */
interface AiRunner {
  run(model: string, inputs: Record<string, unknown>, options?: { signal?: AbortSignal }): Promise<unknown>;
}

interface Job {
  field: string;
  text: string;
  voice?: string;
}

function modelOf(env: ProcessorEnv): string {
  return env.TTS_MODEL?.trim() || DEFAULT_TTS_MODEL;
}

/**
 * The artifact name of item `index` (0-based), zero-padded so names sort in item order (4 digits cover
 * MAX_TTS_ITEMS).
 *
 * @example
 * itemName(0, "mp3"); // "item-0001.mp3"
 */
export function itemName(index: number, format: TtsFormat): string {
  return `item-${String(index + 1).padStart(4, "0")}.${format}`;
}

/** Rejects what the configured model cannot do, naming the payload field, before anything is paid for. */
function checkAgainstModel(payload: TtsPayload, jobs: Job[], model: string, adapter: TtsAdapter): void {
  if (!adapter.formats.includes(payload.format)) {
    throw new PermanentError(`format: ${model} produces ${adapter.formats.join(", ")} only, not ${payload.format}`);
  }
  if (payload.lang !== undefined && !adapter.takesLang) {
    throw new PermanentError(`lang: ${model} takes no language (pick a model or voice for the language instead)`);
  }
  const voiced = [
    ...(payload.voice === undefined ? [] : [{ field: "voice", voice: payload.voice }]),
    ...jobs.flatMap((j) => (j.voice === undefined ? [] : [{ field: `${j.field}.voice`, voice: j.voice }])),
  ];
  for (const { field, voice } of voiced) {
    if (adapter.voices === null) throw new PermanentError(`${field}: ${model} has no voices to choose from`);
    if (adapter.voices !== undefined && !adapter.voices.includes(voice)) {
      throw new PermanentError(`${field}: ${model} has no voice "${voice}" (one of ${adapter.voices.join(", ")})`);
    }
  }
}

/** The finished artifacts an earlier attempt recorded, by name; an unreadable checkpoint counts as none. */
function finishedEarlier(checkpoint: unknown): Map<string, ArtifactInfo> {
  const parsed = checkpointSchema.safeParse(checkpoint);
  return new Map(parsed.success ? parsed.data.done.map((a) => [a.name, a]) : []);
}

function stop(ctx: ProcessorContext, position: string): never {
  const reason: unknown = ctx.signal.reason;
  throw new Error(`tts stopped before item ${position}: ${reason instanceof Error ? reason.message : String(reason)}`);
}

/**
 * Text to speech with Workers AI (`env.AI`, model `env.TTS_MODEL`). Each item becomes an artifact
 * `item-0001.mp3`, `item-0002.mp3`, ...; after each one the task checkpoints the artifacts so far, so a
 * retry skips (and does not pay again for) items whose artifacts still exist in R2.
 *
 * @example
 * // POST /v1/queues/speech/tasks
 * { "type": "tts", "payload": { "items": ["Chapter one.", { "text": "Chapter two.", "voice": "luna" }],
 *   "format": "wav" } }
 * // result, with TTS_MODEL=@cf/deepgram/aura-1:
 * { "model": "@cf/deepgram/aura-1", "voice": "angus", "format": "wav", "items": 2, "resumed_from": 0,
 *   "artifacts": [{ "name": "item-0001.wav", "content_type": "audio/wav", "size": 81244 }, ...] }
 *
 * `resumed_from` counts the items reused from an earlier attempt (0 on a first attempt).
 */
export const ttsProcessor: Processor<TtsPayload> = {
  type: "tts",
  payload: payloadSchema,

  engine(env) {
    const model = modelOf(env);
    const name = `workers-ai (${model})`;
    if (!env.AI) return { name, available: false, note: NO_AI };
    if (!adapterFor(model)) return { name, available: false, note: `unknown TTS_MODEL; known: ${KNOWN_MODELS}` };
    return { name, available: true };
  },

  async run(payload, ctx) {
    if (!ctx.env.AI) throw new PermanentError(NO_AI);
    const ai = ctx.env.AI as unknown as AiRunner;
    const model = modelOf(ctx.env);
    const adapter = adapterFor(model);
    if (!adapter) throw new PermanentError(`TTS_MODEL ${model} is not a model tts knows (${KNOWN_MODELS})`);

    const jobs: Job[] =
      payload.text !== undefined
        ? [{ field: "text", text: payload.text }]
        : (payload.items ?? []).map((item, i) =>
            typeof item === "string" ? { field: `items.${i}`, text: item } : { field: `items.${i}`, ...item },
          );
    checkAgainstModel(payload, jobs, model, adapter);

    const earlier = finishedEarlier(ctx.checkpoint);
    const artifacts: ArtifactInfo[] = [];
    let resumed = 0;
    for (const [i, job] of jobs.entries()) {
      const position = `${i + 1}/${jobs.length}`;
      if (ctx.signal.aborted) stop(ctx, position);
      const artifact = itemName(i, payload.format);

      // Reuse an item an earlier attempt finished, if its artifact is still there as recorded.
      const recorded = earlier.get(artifact);
      const stored = recorded ? await ctx.artifacts.head(artifact) : null;
      if (recorded && stored && stored.size === recorded.size) {
        artifacts.push(stored);
        resumed += 1;
        continue;
      }

      const voice = job.voice ?? payload.voice;
      const inputs = adapter.inputs({ text: job.text, voice, format: payload.format, lang: payload.lang });
      const bytes = await audioBytes(await ai.run(model, inputs, { signal: ctx.signal }));
      artifacts.push(await ctx.artifacts.put(artifact, bytes, CONTENT_TYPES[payload.format]));
      await ctx.saveCheckpoint(
        { done: [...artifacts] },
        { percent: Math.round((100 * artifacts.length) / jobs.length), message: `item ${position}` },
      );
    }

    return {
      model,
      voice: payload.voice ?? adapter.defaultVoice,
      format: payload.format,
      artifacts,
      items: jobs.length,
      resumed_from: resumed,
    };
  },
};
