/**
 * The few cryptographic helpers edgeq's protocols share — the bearer-token check, SQS's SigV4, the events
 * tickets, webhook signatures: lower-case hex, HMAC-SHA256 and a constant-time compare. Web Crypto only,
 * so the same code runs in Workers, Node 20+ and browsers (a webhook receiver may copy
 * src/processors/webhook-signature.ts, which uses these).
 *
 * @example
 * const signature = hex(await hmacSha256("secret", "1767225600.{}"));
 * timingSafeEqual(signature, presented); // false for a wrong or shorter one, never a throw
 */

const encoder = new TextEncoder();

/** Text as its UTF-8 bytes; bytes as they are. */
function bytesOf(data: string | ArrayBuffer | Uint8Array): Uint8Array {
  if (typeof data === "string") return encoder.encode(data);
  return data instanceof Uint8Array ? data : new Uint8Array(data);
}

/**
 * Bytes as lower-case hex, two digits a byte.
 *
 * @example
 * hex(new Uint8Array([0, 171, 255])); // "00abff"
 */
export function hex(bytes: ArrayBuffer | Uint8Array): string {
  return Array.from(bytesOf(bytes), (b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * HMAC-SHA256 of `data` under `key` (text is taken as its UTF-8 bytes).
 *
 * @example
 * hex(await hmacSha256("key", "The quick brown fox jumps over the lazy dog"));
 * // "f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8"
 */
export async function hmacSha256(key: string | Uint8Array, data: string | Uint8Array): Promise<Uint8Array> {
  const cryptoKey = await crypto.subtle.importKey("raw", bytesOf(key), { name: "HMAC", hash: "SHA-256" }, false, [
    "sign",
  ]);
  return new Uint8Array(await crypto.subtle.sign("HMAC", cryptoKey, bytesOf(data)));
}

/**
 * Whether `a` and `b` are the same (text compared as its UTF-8 bytes), in time that does not depend on
 * where they differ: every byte is visited and the differences are OR-ed together, with no early exit. Two
 * of different lengths are simply unequal (the length of a token or signature is no secret). Plain
 * JavaScript rather than Workers' `crypto.subtle.timingSafeEqual`, which Node and browsers lack: one
 * function for every caller.
 *
 * @example
 * timingSafeEqual("s3cret", presentedToken);
 */
export function timingSafeEqual(a: string | Uint8Array, b: string | Uint8Array): boolean {
  const left = bytesOf(a);
  const right = bytesOf(b);
  if (left.byteLength !== right.byteLength) return false;
  let diff = 0;
  for (let i = 0; i < left.byteLength; i += 1) diff |= left[i]! ^ right[i]!;
  return diff === 0;
}
