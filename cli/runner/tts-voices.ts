import { MAX_ERROR_MESSAGE_CHARS } from "../../src/contracts/limits";
import { runChild } from "./child";
import type { EspeakEngine } from "./tts-engine";

/** `--voices` prints ~130 lines of ~80 characters: 64 KiB holds it whole with room for a larger build. */
const VOICES_OUTPUT_LIMIT = 64 * 1024;

/** Listing voices takes as long as a probe: ten seconds only catches a hung program. */
const VOICES_TIMEOUT_MS = 10_000;

/** How much of a failure message the language list may take: the API keeps MAX_ERROR_MESSAGE_CHARS of an
 * error, and the rest of the message (field, voice, and twice the engine's command line, a path) needs
 * a few hundred. espeak-ng's ~130 languages take about 1,000. */
const LANGUAGE_LIST_CHARS = MAX_ERROR_MESSAGE_CHARS - 600;

/**
 * The language codes of `espeak-ng --voices` (its second column), in its order. Empty when the listing
 * fails: the message that uses it still says how to list them.
 *
 * @example
 * await languageCodes(engine, signal); // ["af", "am", "an", ..., "en-us", ..., "piqd", ...]
 */
export async function languageCodes(engine: EspeakEngine, signal: AbortSignal): Promise<string[]> {
  const exit = await runChild({
    command: engine.command,
    args: [...engine.prefix, "--voices"],
    signal,
    timeoutMs: VOICES_TIMEOUT_MS,
    stdoutLimit: VOICES_OUTPUT_LIMIT,
    stderrLimit: 4096,
  });
  if (exit.code !== 0) return [];
  // "Pty Language Age/Gender VoiceName File Other Languages", then one voice a line: " 5  af  --/M ...".
  return exit.stdout
    .text()
    .split("\n")
    .slice(1)
    .map((line) => line.trim().split(/\s+/)[1])
    .filter((code): code is string => code !== undefined && code !== "");
}

/**
 * The permanent failure for a voice espeak-ng refused: names the field and the voice, lists the languages
 * it knows and says how to see voice names and variants.
 *
 * @example
 * unknownVoiceMessage("voice", "elvish", ["af", "en-us"], engine);
 * // 'voice: espeak-ng has no voice "elvish"; use a language (af, en-us), a voice name or file from
 * //  `espeak-ng --voices`, or either with a variant from `espeak-ng --voices=variant` (e.g. en+f3)'
 */
export function unknownVoiceMessage(field: string, voice: string, languages: string[], engine: EspeakEngine): string {
  let list = languages.join(", ");
  if (list.length > LANGUAGE_LIST_CHARS) list = `${list.slice(0, list.lastIndexOf(", ", LANGUAGE_LIST_CHARS))}, …`;
  const cmd = engine.commandLine;
  return (
    `${field}: espeak-ng has no voice "${voice}"; use a language${list ? ` (${list})` : ""}, a voice name or ` +
    `file from \`${cmd} --voices\`, or either with a variant from \`${cmd} --voices=variant\` (e.g. en+f3)`
  );
}
