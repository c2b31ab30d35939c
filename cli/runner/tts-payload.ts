import { z } from "zod";
import { ttsPayloadSchema } from "../../src/plugins/tts/tts";

/**
 * The `tts` payload as src/plugins/tts/tts.ts defines it (exactly one of `text` or `items`, optional voice,
 * format, lang), except that `format` defaults to what espeak-ng makes, wav, rather than Workers AI's mp3.
 */
const payloadSchema = ttsPayloadSchema("wav");

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
