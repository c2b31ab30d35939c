import { hex, hmacSha256, timingSafeEqual } from "../contracts/crypto";

/**
 * Webhook signatures: how the `http` processor signs what it sends, and how a receiver checks it.
 *
 * ## The scheme
 *
 * Every webhook carries a header
 *
 * ```
 * Edgeq-Signature: t=<timestamp>,v1=<signature>
 * ```
 *
 * - `<timestamp>` is when the request was signed, in whole Unix seconds (decimal digits).
 * - `<signature>` is the lowercase hex encoding of HMAC-SHA256, keyed with the UTF-8 bytes of the
 *   `WEBHOOK_SECRET` secret, over the bytes of `<timestamp>`, a `.` and the raw request body exactly as
 *   received (before any JSON parsing; an empty body when the request has none):
 *   `hex(HMAC_SHA256(secret, "<timestamp>.<raw body>"))`.
 *
 * To verify, a receiver:
 * 1. splits the header on `,` into `key=value` pairs and takes `t` and every `v1` (unknown keys are
 *    ignored, so new schemes can be added next to `v1` later);
 * 2. recomputes the HMAC over `"<t>.<raw body>"` with its copy of the secret;
 * 3. accepts only if some `v1` equals it, compared in constant time, and `t` is within a tolerance
 *    (5 minutes by default) of its own clock — which rejects replays of an old, captured request.
 *
 * Each request also carries `Edgeq-Task-Id` (the task's id: the same across retries, so a receiver can
 * deduplicate) and `Edgeq-Attempt` (1 on the first attempt). They are not signed; the body is.
 */

/** The header that carries the signature. */
export const SIGNATURE_HEADER = "Edgeq-Signature";

/** The default replay window, in seconds: 5 minutes allows for clock skew between sender and receiver and
 * for a slow network, while keeping a captured request useless soon after. */
export const DEFAULT_TOLERANCE_S = 300;

/** A v1 signature: 32 bytes of HMAC-SHA256 as 64 hex digits. */
const V1_PATTERN = /^[0-9a-f]{64}$/i;

/** A timestamp: whole Unix seconds. At most 15 digits so the number stays an exact integer. */
const TIMESTAMP_PATTERN = /^\d{1,15}$/;

const encoder = new TextEncoder();

type Body = string | ArrayBuffer | Uint8Array;

function bytesOf(body: Body): Uint8Array {
  if (typeof body === "string") return encoder.encode(body);
  return body instanceof Uint8Array ? body : new Uint8Array(body);
}

/** hex(HMAC-SHA256(secret, "<timestamp>.<body>")), the v1 signature. */
async function v1Signature(secret: string, timestampS: number, body: Body): Promise<string> {
  const prefix = encoder.encode(`${timestampS}.`);
  const content = bytesOf(body);
  const message = new Uint8Array(prefix.length + content.length);
  message.set(prefix, 0);
  message.set(content, prefix.length);
  return hex(await hmacSha256(secret, message));
}

/**
 * The `Edgeq-Signature` header value for `body` signed at `timestampS` (Unix seconds).
 *
 * @example
 * const header = await signWebhook(env.WEBHOOK_SECRET, JSON.stringify({ id: 1 }), Math.floor(Date.now() / 1000));
 * // "t=1767225600,v1=5f0c…"
 */
export async function signWebhook(secret: string, body: Body, timestampS: number): Promise<string> {
  if (!Number.isSafeInteger(timestampS) || timestampS < 0) {
    throw new RangeError(`timestamp must be whole Unix seconds, got ${timestampS}`);
  }
  return `t=${timestampS},v1=${await v1Signature(secret, timestampS, body)}`;
}

/**
 * Whether `header` (the `Edgeq-Signature` value) is a valid signature of `body` made no more than
 * `toleranceS` seconds before or after `nowS`. `body` must be the raw body as received. Never throws on
 * a malformed header: it is simply not valid.
 *
 * @example
 * // In a receiver (Workers, Node 20+, Deno, Bun: anything with Web Crypto):
 * const raw = await request.text();
 * const ok = await verifyWebhook(secret, raw, request.headers.get("Edgeq-Signature"), Math.floor(Date.now() / 1000));
 * if (!ok) return new Response("bad signature", { status: 401 });
 */
export async function verifyWebhook(
  secret: string,
  body: Body,
  header: string | null | undefined,
  nowS: number,
  toleranceS: number = DEFAULT_TOLERANCE_S,
): Promise<boolean> {
  if (!header) return false;
  let timestamp: string | undefined;
  const candidates: string[] = [];
  for (const part of header.split(",")) {
    const eq = part.indexOf("=");
    if (eq < 0) continue;
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (key === "t") timestamp = value;
    else if (key === "v1" && V1_PATTERN.test(value)) candidates.push(value.toLowerCase());
  }
  if (timestamp === undefined || !TIMESTAMP_PATTERN.test(timestamp) || candidates.length === 0) return false;
  const t = Number(timestamp);
  if (Math.abs(nowS - t) > toleranceS) return false;
  const expected = await v1Signature(secret, t, body);
  // Check every candidate (no early return) so the time taken does not depend on which one matched.
  let matched = false;
  for (const candidate of candidates) matched = timingSafeEqual(candidate, expected) || matched;
  return matched;
}
