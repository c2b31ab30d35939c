import { SqsError } from "./errors";

/**
 * Receipt handles: the task id and the lease token of the receive that produced it, so every write with a
 * handle is fenced by that very lease (src/engine/ack.ts). A handle from an earlier receive carries a
 * superseded token and changes nothing — as SQS, where only the latest receipt handle counts. Encoded as
 * base64url of `v1:<task id>:<lease token>` so it reads as opaque, as SQS's do.
 */

const PREFIX = "v1";

function toBase64Url(text: string): string {
  return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** The receipt handle of one lease. */
export function encodeReceiptHandle(id: string, leaseToken: string): string {
  return toBase64Url(`${PREFIX}:${id}:${leaseToken}`);
}

/**
 * The task id and lease token a receipt handle carries; anything else is `ReceiptHandleIsInvalid`.
 *
 * @example
 * const { id, leaseToken } = decodeReceiptHandle(handle);
 */
export function decodeReceiptHandle(handle: unknown): { id: string; leaseToken: string } {
  const invalid = new SqsError(
    "ReceiptHandleIsInvalid",
    `The input receipt handle "${String(handle).slice(0, 80)}" is not a valid receipt handle.`,
  );
  if (typeof handle !== "string" || handle.length === 0 || handle.length > 200 || !/^[A-Za-z0-9_-]+$/.test(handle)) {
    throw invalid;
  }
  let text: string;
  try {
    text = atob(handle.replace(/-/g, "+").replace(/_/g, "/"));
  } catch {
    throw invalid;
  }
  // A token: 128 random bits in hex, and for a task in a pack its slot's two characters (packs/slot-rules.ts).
  const match = /^v1:([0-9A-Za-z]{26}):([0-9a-f]{32}(?:[0-9A-Z]{2})?)$/.exec(text);
  if (!match) throw invalid;
  return { id: match[1]!, leaseToken: match[2]! };
}
