/**
 * Reading a webhook receiver's answer: a bounded prefix of its body and its Retry-After header.
 */

/** How much of a receiver's response body a result keeps: 4 KiB is enough for an id or an error message,
 * and keeps a task's result row small (D1 stores it next to the payload) whatever the receiver returns. */
export const MAX_RESPONSE_BODY_BYTES = 4 * 1024;

/** How much of the response body a failure message quotes: enough to read the receiver's error, short
 * enough that a task's error history (one entry per attempt) stays small. */
export const ERROR_EXCERPT_CHARS = 200;

/** The longest Retry-After honoured, in seconds. Longer requests are cut to 1 hour — the engine's default
 * backoff cap — so a misconfigured or hostile receiver cannot park a task for days; the task's remaining
 * attempts still bound how often it is retried. */
export const MAX_RETRY_AFTER_S = 60 * 60;

/**
 * Reads at most `maxBytes` of a response body as UTF-8 and cancels the rest, so a huge (or endless) body
 * is never downloaded. `truncated` says whether anything was left unread. A multi-byte character cut at
 * the limit is dropped rather than turned into a replacement character.
 *
 * @example
 * const { text, truncated } = await readBodyPrefix(response, MAX_RESPONSE_BODY_BYTES);
 */
export async function readBodyPrefix(
  response: Response,
  maxBytes: number,
): Promise<{ text: string; truncated: boolean }> {
  if (response.body === null) return { text: "", truncated: false };
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  let truncated = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.byteLength;
      if (size > maxBytes) {
        truncated = true;
        break;
      }
    }
  } finally {
    if (truncated) await reader.cancel().catch(() => undefined);
    else reader.releaseLock();
  }
  const bytes = new Uint8Array(Math.min(size, maxBytes));
  let offset = 0;
  for (const chunk of chunks) {
    const part = chunk.subarray(0, bytes.length - offset);
    bytes.set(part, offset);
    offset += part.length;
    if (offset === bytes.length) break;
  }
  // stream: true keeps an incomplete trailing character buffered; not flushing drops it.
  return { text: new TextDecoder().decode(bytes, { stream: truncated }), truncated };
}

/**
 * The delay a `Retry-After` header asks for, in whole seconds, capped at `MAX_RETRY_AFTER_S`. It may be
 * delta-seconds (`120`) or an HTTP date (`Wed, 21 Oct 2026 07:28:00 GMT`, measured from `nowMs`). Returns
 * null when the header is absent, malformed, zero or in the past: the queue's normal backoff then
 * applies rather than an immediate retry.
 *
 * @example
 * parseRetryAfter("7", Date.now()); // 7
 * parseRetryAfter(new Date(Date.now() + 60_000).toUTCString(), Date.now()); // 60
 */
export function parseRetryAfter(value: string | null, nowMs: number): number | null {
  if (value === null) return null;
  const trimmed = value.trim();
  let seconds: number;
  if (/^\d+$/.test(trimmed)) {
    seconds = Number(trimmed);
  } else {
    // An HTTP date always names a day or month; requiring a letter keeps Date.parse from reading "1.5" as 2001.
    const at = /[a-z]/i.test(trimmed) ? Date.parse(trimmed) : NaN;
    if (Number.isNaN(at)) return null;
    seconds = Math.ceil((at - nowMs) / 1000);
  }
  if (!(seconds > 0)) return null;
  return Math.min(seconds, MAX_RETRY_AFTER_S);
}

/** The first `ERROR_EXCERPT_CHARS` of a body, on one line, for an error message. */
export function excerpt(text: string): string {
  const oneLine = text.replace(/\s+/g, " ").trim();
  return oneLine.length > ERROR_EXCERPT_CHARS ? `${oneLine.slice(0, ERROR_EXCERPT_CHARS)}…` : oneLine;
}
