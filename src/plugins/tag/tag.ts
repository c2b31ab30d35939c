import * as z from "zod";
import { DEFAULT_TAG_MODEL, aiTags, type TextGenerator } from "./tag-ai";
import { localTags } from "./tag-local";
import { applyThresholds, type TagResult } from "./tag-result";
import { tagCalibrations } from "./calibrations";
import type { Processor, ProcessorEnv } from "../../processors/types";

/** Longest text accepted, in characters. 100,000 characters is a long chapter; the local engine tags it
 * in well under a second of CPU, and the payload stays far below the 256 KiB payload limit. */
export const MAX_TAG_TEXT_CHARS = 100_000;

/** Most tags a task may ask for: beyond 50 a tag list stops describing a text and starts indexing it. */
export const MAX_TAGS = 50;

/** Tags returned when the payload does not say: enough to describe a text, few enough to read. */
export const DEFAULT_MAX_TAGS = 10;

export interface TagPayload {
  text: string;
  max_tags: number;
}

/** The model a Workers AI deployment tags with. */
function modelOf(env: ProcessorEnv): string {
  return env.TAG_MODEL?.trim() || DEFAULT_TAG_MODEL;
}

/**
 * `tag`: keywords, keyphrases (and with Workers AI, concepts and themes) of a text, scored 0..1.
 * With the AI binding it asks env.TAG_MODEL for JSON; without it, it tags locally with retext-keywords.
 * If the task has a group with a calibration (see `calibrate`), tags scoring below their threshold are
 * moved to `dropped`.
 *
 * @example
 * // POST /v1/queues/docs/tasks  { "tasks": [{ "type": "tag", "group": "library-1",
 * //   "payload": { "text": "Jazz piano recordings ...", "max_tags": 5 } }] }
 * // result: { engine: "local", tags: [{ tag: "jazz", score: 1 }, ...], dropped: [], calibrated: false }
 */
export const tagProcessor: Processor<TagPayload> = {
  type: "tag",
  payload: z.object({
    text: z.string().min(1).max(MAX_TAG_TEXT_CHARS),
    max_tags: z.number().int().min(1).max(MAX_TAGS).default(DEFAULT_MAX_TAGS),
  }),
  engine: (env) => ({
    name: env.AI ? `workers-ai (${modelOf(env)})` : "local (retext-keywords)",
    available: true,
  }),
  async run(payload, ctx): Promise<TagResult> {
    ctx.signal.throwIfAborted();
    let result: Omit<TagResult, "dropped" | "calibrated">;
    if (ctx.env.AI) {
      const model = modelOf(ctx.env);
      // The binding's overloads are typed per known model name; ours is a runtime setting.
      const ai = await aiTags(ctx.env.AI as unknown as TextGenerator, model, payload.text, payload.max_tags);
      result = { engine: "workers-ai", model, tags: ai.tags, concepts: ai.concepts, themes: ai.themes };
      if (ai.truncated) result.truncated = true;
    } else {
      result = { engine: "local", tags: await localTags(payload.text, payload.max_tags) };
    }
    ctx.signal.throwIfAborted();

    const thresholds = ctx.group === null ? null : await tagCalibrations(ctx).getThresholds(ctx.group);
    if (thresholds === null) return { ...result, dropped: [], calibrated: false };
    const { kept, dropped } = applyThresholds(result.tags, thresholds);
    return { ...result, tags: kept, dropped, calibrated: true };
  },
};
