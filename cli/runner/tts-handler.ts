import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MAX_ERROR_MESSAGE_CHARS } from "../../src/contracts/limits";
import { itemName } from "../../src/plugins/tts/tts";
import { runChild } from "./child";
import { tail } from "./tail-buffer";
import { findEspeak, type EspeakEngine } from "./tts-engine";
import { checkpointSchema, parseTtsPayload, type TtsJob } from "./tts-payload";
import { languageCodes, unknownVoiceMessage } from "./tts-voices";
import type { ArtifactInfo, HandlerContext, Outcome, TaskHandler } from "./types";

/** espeak-ng's own default voice, reported in the result when the payload names none. */
const DEFAULT_VOICE = "en";

/** One item's render may take this long: MAX_TTS_TEXT_CHARS (2,000 characters, ~2 minutes of speech)
 * render in 0.8 s with the WebAssembly build here, less natively, so a synthesizer still busy after a
 * minute is stuck, and its task should fail and retry, not hold a slot. */
const RENDER_TIMEOUT_MS = 60_000;

/** A failure no retry can fix (a bad payload, an unknown voice): the task goes dead at once. */
class PermanentFailure extends Error {}

/**
 * Fails with a clear message unless an espeak-ng runs here (a system one, or the npm build installed with
 * edgeq); `--engine tts` calls it before leasing.
 */
export function checkEspeak(): void {
  findEspeak();
}

/** Renders one item to WAV bytes with `espeak-ng -v <voice> -w <file> --stdin` (the text on stdin, so a
 * text starting with "-" is never taken for an option). */
async function render(
  engine: EspeakEngine,
  job: TtsJob,
  voice: string,
  voiceField: string,
  file: string,
  signal: AbortSignal,
) {
  const exit = await runChild({
    command: engine.command,
    args: [...engine.prefix, "-v", voice, "-w", file, "--stdin"],
    stdin: job.text,
    signal,
    timeoutMs: RENDER_TIMEOUT_MS,
    // espeak-ng prints nothing on success and one line on error: 4 KiB keeps any message whole.
    stdoutLimit: 4096,
    stderrLimit: 4096,
  });
  signal.throwIfAborted();
  if (exit.code !== 0) {
    const stderr = exit.stderr.text().trim();
    if (/voice does not exist/i.test(stderr)) {
      const languages = await languageCodes(engine, signal);
      throw new PermanentFailure(unknownVoiceMessage(voiceField, voice, languages, engine));
    }
    const status = exit.spawnError?.message ?? (exit.timedOut ? "timed out" : `exit ${exit.code ?? exit.signal}`);
    // Half the API's error length: room for the prefix, and espeak-ng's messages are one line.
    throw new Error(`espeak-ng failed on ${job.field} (${status}): ${tail(stderr, MAX_ERROR_MESSAGE_CHARS / 2)}`);
  }
  const bytes = await readFile(file);
  await rm(file, { force: true });
  return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** The artifacts an earlier attempt checkpointed that are still stored as recorded, by name. */
async function reusable(checkpoint: unknown, ctx: HandlerContext): Promise<Map<string, ArtifactInfo>> {
  const parsed = checkpointSchema.safeParse(checkpoint);
  if (!parsed.success || parsed.data.done.length === 0) return new Map();
  const stored = new Map((await ctx.listArtifacts()).map((a) => [a.name, a]));
  const usable = parsed.data.done.filter((a) => stored.get(a.name)?.size === a.size);
  return new Map(usable.map((a) => [a.name, stored.get(a.name)!]));
}

/**
 * `--engine tts`: renders tts tasks (payload as the tts processor's, see src/plugins/tts/tts.ts) with
 * espeak-ng on this host (see {@link findEspeak}). Each item becomes the artifact `item-0001.wav`, ... uploaded under the task's
 * lease; after each, one heartbeat records progress and a checkpoint of the artifacts so far, so a retry
 * resumes after the last finished item. `voice` (or an item's voice, else `lang`) is espeak-ng's `-v`.
 *
 * @example
 * // payload { "items": ["Chapter one.", { "text": "Chapitre deux.", "voice": "fr" }] } completes with
 * { "model": "espeak-ng", "voice": "en", "format": "wav", "items": 2, "resumed_from": 0,
 *   "artifacts": [{ "name": "item-0001.wav", "content_type": "audio/wav", "size": 40044 }, ...] }
 */
export function ttsHandler(): TaskHandler {
  const engine = findEspeak();
  return {
    describe: `engine tts (${engine.describe})`,
    async run(task, ctx): Promise<Outcome> {
      const parsed = parseTtsPayload(task.payload);
      if ("error" in parsed) return { kind: "fail", error: parsed.error, retryable: false };
      const { payload, jobs } = parsed;
      const dir = await mkdtemp(join(tmpdir(), "edgeq-tts-"));
      try {
        const earlier = await reusable(task.checkpoint, ctx);
        const artifacts: ArtifactInfo[] = [];
        let resumed = 0;
        for (const [i, job] of jobs.entries()) {
          ctx.signal.throwIfAborted();
          const name = itemName(i, "wav");
          const stored = earlier.get(name);
          if (stored) {
            artifacts.push(stored);
            resumed += 1;
            continue;
          }
          const voice = job.voice ?? payload.voice ?? payload.lang ?? DEFAULT_VOICE;
          const field = job.voice !== undefined ? `${job.field}.voice` : payload.voice !== undefined ? "voice" : "lang";
          const bytes = await render(engine, job, voice, field, join(dir, name), ctx.signal);
          artifacts.push(await ctx.putArtifact(name, bytes, "audio/wav"));
          await ctx.heartbeat({
            checkpoint: { done: [...artifacts] },
            progress: Math.round((100 * artifacts.length) / jobs.length),
            message: `item ${i + 1}/${jobs.length}`,
          });
        }
        return {
          kind: "complete",
          result: {
            model: "espeak-ng",
            voice: payload.voice ?? payload.lang ?? DEFAULT_VOICE,
            format: "wav",
            artifacts,
            items: jobs.length,
            resumed_from: resumed,
          },
        };
      } catch (error) {
        if (error instanceof PermanentFailure) return { kind: "fail", error: error.message, retryable: false };
        throw error;
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },
  };
}
