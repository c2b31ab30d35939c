import { z } from "zod";
import { MAX_TTS_ITEMS, MAX_TTS_TEXT_CHARS } from "../../src/processors/tts";

/** Longest voice or language name, as the tts processor: real ones are a few characters. */
const MAX_NAME_CHARS = 64;

const text = z
  .string()
  .max(MAX_TTS_TEXT_CHARS)
  .refine((s) => s.trim().length > 0, "must not be empty or blank");
const name = z.string().min(1).max(MAX_NAME_CHARS);

/**
 * The `tts` payload as src/processors/tts.ts defines it (exactly one of `text` or `items`, optional voice,
 * format, lang), except that `format` defaults to what espeak-ng makes, wav, rather than the Workers AI
 * default, mp3.
 */
const payloadSchema = z
  .strictObject({
    text: text.optional(),
    items: z
      .array(z.union([text, z.strictObject({ text, voice: name.optional() })]))
      .min(1)
      .max(MAX_TTS_ITEMS)
      .optional(),
    voice: name.optional(),
    format: z.enum(["mp3", "wav"]).default("wav"),
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

/** A validated tts payload, `format` filled in. */
export type EngineTtsPayload = z.infer<typeof payloadSchema>;

/** One item to render: where it came from (for messages), its text, and its own voice if any. */
export interface TtsJob {
  field: string;
  text: string;
  voice?: string;
}

/** The checkpoint saved after each item, as the tts processor's: every artifact finished so far. */
export const checkpointSchema = z.object({
  done: z.array(z.object({ name: z.string(), content_type: z.string(), size: z.number() })),
});

/**
 * Validates a tts payload and lists its items. Returns an error message (naming the field) for a payload
 * that can never render, which fails the task permanently.
 *
 * @example
 * parseTtsPayload({ items: ["One.", { text: "Two.", voice: "fr" }] });
 * // { payload: {...}, jobs: [{ field: "items.0", text: "One." }, { field: "items.1", text: "Two.", voice: "fr" }] }
 */
export function parseTtsPayload(raw: unknown): { payload: EngineTtsPayload; jobs: TtsJob[] } | { error: string } {
  const parsed = payloadSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return { error: `invalid tts payload: ${issue?.path.join(".") || "payload"}: ${issue?.message ?? "invalid"}` };
  }
  const payload = parsed.data;
  if (payload.format !== "wav") return { error: `format: espeak-ng renders wav only, not ${payload.format}` };
  const jobs: TtsJob[] =
    payload.text !== undefined
      ? [{ field: "text", text: payload.text }]
      : (payload.items ?? []).map((item, i) =>
          typeof item === "string" ? { field: `items.${i}`, text: item } : { field: `items.${i}`, ...item },
        );
  return { payload, jobs };
}
