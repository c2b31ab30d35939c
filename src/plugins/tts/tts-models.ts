import { PermanentError } from "../../processors/errors";

/** Audio formats the `tts` processor can store. */
export type TtsFormat = "mp3" | "wav";

/** The MIME type stored with each artifact, per format. */
export const CONTENT_TYPES: Record<TtsFormat, string> = { mp3: "audio/mpeg", wav: "audio/wav" };

/** One synthesis call, already validated against the payload schema. */
export interface TtsRequest {
  text: string;
  voice?: string;
  format: TtsFormat;
  lang?: string;
}

/**
 * What differs between Workers AI text-to-speech model families: their inputs, the formats and voices
 * they offer. Outputs are normalised by {@link audioBytes}, whatever shape the binding returns.
 *
 * @example
 * const adapter = adapterFor("@cf/deepgram/aura-1");
 * const inputs = adapter?.inputs({ text: "Hello", format: "wav" });
 * // { text: "Hello", encoding: "linear16", container: "wav" }
 */
export interface TtsAdapter {
  family: string;
  formats: readonly TtsFormat[];
  /** Voices the model accepts; null when it has no voice choice; undefined when not checked here. */
  voices: readonly string[] | null | undefined;
  /** The voice used when none is given (reported in the result), or null. */
  defaultVoice: string | null;
  /** Whether the model takes a `lang` input. */
  takesLang: boolean;
  inputs(request: TtsRequest): Record<string, unknown>;
}

const melotts: TtsAdapter = {
  family: "melotts",
  // MeloTTS on Workers AI returns MP3 only (base64 in `audio`).
  formats: ["mp3"],
  voices: null,
  defaultVoice: null,
  takesLang: true,
  inputs: (r) => (r.lang === undefined ? { prompt: r.text } : { prompt: r.text, lang: r.lang }),
};

/** The speakers @cf/deepgram/aura-1 accepts (workers-types' Ai_Cf_Deepgram_Aura_1_Input). */
const AURA_1_SPEAKERS = [
  "angus",
  "asteria",
  "arcas",
  "orion",
  "orpheus",
  "athena",
  "luna",
  "zeus",
  "perseus",
  "helios",
  "hera",
  "stella",
] as const;

function deepgram(voices: readonly string[] | undefined, defaultVoice: string | null): TtsAdapter {
  return {
    family: "deepgram-aura",
    formats: ["mp3", "wav"],
    voices,
    defaultVoice,
    takesLang: false,
    inputs: (r) => ({
      text: r.text,
      ...(r.voice === undefined ? {} : { speaker: r.voice }),
      // WAV is 16-bit PCM in a WAV container; MP3 takes no container.
      ...(r.format === "wav" ? { encoding: "linear16", container: "wav" } : { encoding: "mp3" }),
    }),
  };
}

/**
 * The adapter for a Workers AI model id, or null when this processor does not know the model family.
 *
 * @example
 * adapterFor("@cf/myshell-ai/melotts")?.formats; // ["mp3"]
 */
export function adapterFor(model: string): TtsAdapter | null {
  if (model === "@cf/myshell-ai/melotts") return melotts;
  if (model === "@cf/deepgram/aura-1") return deepgram(AURA_1_SPEAKERS, "angus");
  // aura-2 models (per language) take the same inputs; their long voice lists are left to the model.
  if (model.startsWith("@cf/deepgram/aura-2")) return deepgram(undefined, null);
  return null;
}

/** Model ids (or families) {@link adapterFor} knows, for error messages. */
export const KNOWN_MODELS = "@cf/myshell-ai/melotts, @cf/deepgram/aura-1, @cf/deepgram/aura-2-*";

function fromBase64(value: string): Uint8Array {
  let binary: string;
  try {
    binary = atob(value);
  } catch {
    throw new PermanentError("the model's `audio` is not valid base64");
  }
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (typeof value !== "object") return typeof value;
  const keys = Object.keys(value).slice(0, 5);
  return `${value.constructor?.name ?? "object"}${keys.length ? ` with keys ${keys.join(", ")}` : ""}`;
}

/**
 * The audio bytes in whatever the AI binding returned: `{ audio: "<base64>" }` (melotts), a
 * ReadableStream (aura), an ArrayBuffer or typed array, or a Response. An empty result is a retryable
 * failure; a shape this code does not know is permanent (a retry would pay for the same answer again).
 *
 * @example
 * const bytes = await audioBytes({ audio: "SUQz" }); // Uint8Array [73, 68, 51] ("ID3")
 */
export async function audioBytes(output: unknown): Promise<Uint8Array> {
  let bytes: Uint8Array;
  if (output instanceof Uint8Array) bytes = output;
  else if (output instanceof ArrayBuffer) bytes = new Uint8Array(output);
  else if (ArrayBuffer.isView(output)) bytes = new Uint8Array(output.buffer, output.byteOffset, output.byteLength);
  else if (output instanceof ReadableStream) bytes = new Uint8Array(await new Response(output).arrayBuffer());
  else if (output instanceof Response) {
    if (!output.ok) throw new Error(`the model answered HTTP ${output.status}: ${(await output.text()).slice(0, 200)}`);
    bytes = new Uint8Array(await output.arrayBuffer());
  } else if (
    typeof output === "object" &&
    output !== null &&
    typeof (output as { audio?: unknown }).audio === "string"
  ) {
    bytes = fromBase64((output as { audio: string }).audio);
  } else {
    throw new PermanentError(`unexpected output from the model: ${describe(output)}`);
  }
  if (bytes.byteLength === 0) throw new Error("the model returned no audio");
  return bytes;
}
