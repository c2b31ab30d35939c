import { hex } from "../contracts/crypto";

/**
 * The MD5 digests SQS returns and SDKs verify: MD5OfMessageBody / MD5OfBody over the body's UTF-8 bytes,
 * and MD5OfMessageAttributes over the attributes encoded as AWS documents it (names sorted; each name,
 * data type and value preceded by its 4-byte big-endian length; a transport byte 1 for String and Number,
 * 2 for Binary between type and value). Workers' Web Crypto computes MD5 (a non-standard algorithm it
 * offers for exactly such protocol checksums).
 */

/** One message attribute as the JSON protocol carries it; BinaryValue is base64. */
export interface MessageAttributeValue {
  DataType: string;
  StringValue?: string;
  BinaryValue?: string;
}

const encoder = new TextEncoder();

/** MD5 of bytes or UTF-8 text, lower-case hex. */
export async function md5Hex(data: string | Uint8Array): Promise<string> {
  const bytes = typeof data === "string" ? encoder.encode(data) : data;
  const digest = await crypto.subtle.digest("MD5", bytes);
  return hex(digest);
}

/** Base64 text to bytes. */
export function base64Bytes(text: string): Uint8Array {
  return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
}

/** Whether an attribute travels as bytes (Binary, Binary.custom) rather than text. */
export function isBinaryType(dataType: string): boolean {
  return dataType === "Binary" || dataType.startsWith("Binary.");
}

/**
 * MD5OfMessageAttributes, or undefined when there are none (SQS then omits the field).
 *
 * @example
 * await md5OfMessageAttributes({ color: { DataType: "String", StringValue: "blue" } });
 */
export async function md5OfMessageAttributes(
  attributes: Record<string, MessageAttributeValue> | undefined,
): Promise<string | undefined> {
  const names = Object.keys(attributes ?? {}).sort();
  if (names.length === 0) return undefined;
  const parts: Uint8Array[] = [];
  const withLength = (bytes: Uint8Array) => {
    const length = new Uint8Array(4);
    new DataView(length.buffer).setUint32(0, bytes.byteLength);
    parts.push(length, bytes);
  };
  for (const name of names) {
    const value = attributes![name]!;
    withLength(encoder.encode(name));
    withLength(encoder.encode(value.DataType));
    const binary = isBinaryType(value.DataType);
    parts.push(new Uint8Array([binary ? 2 : 1]));
    withLength(binary ? base64Bytes(value.BinaryValue ?? "") : encoder.encode(value.StringValue ?? ""));
  }
  const total = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let offset = 0;
  for (const p of parts) {
    total.set(p, offset);
    offset += p.byteLength;
  }
  return md5Hex(total);
}
