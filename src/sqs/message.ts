import type { StoredTask } from "../contracts/stored-task";
import { jsonBytes } from "../contracts/json-value";
import { MAX_PAYLOAD_BYTES, SQS_MAX_MESSAGE_ATTRIBUTES, SQS_MAX_MESSAGE_BYTES } from "../contracts/limits";
import { invalidParameter, SqsError } from "./errors";
import { base64Bytes, isBinaryType, type MessageAttributeValue } from "./md5";

/**
 * How SQS messages and edgeq tasks map onto each other, both ways:
 * - a message sent over SQS is a task of type `sqs` whose payload is `{ "body": "<MessageBody>",
 *   "attributes": { <MessageAttributes> } }` (attributes only when sent), so `edgeq list/show` shows the
 *   body verbatim and the attributes as SQS sent them (BinaryValue stays base64);
 * - any other task (enqueued natively) is received with its payload's JSON text as the body and no
 *   message attributes.
 */
export const SQS_TASK_TYPE = "sqs";

export type MessageAttributes = Record<string, MessageAttributeValue>;

/** The stored payload of a message sent over SQS. */
export interface SqsPayload {
  body: string;
  attributes?: MessageAttributes;
}

/** The body and attributes a task is received with (see the module comment). */
export function messageOfTask(row: Pick<StoredTask, "type" | "payload">): {
  body: string;
  attributes: MessageAttributes;
} {
  if (row.type === SQS_TASK_TYPE) {
    const payload = JSON.parse(row.payload) as unknown;
    if (payload !== null && typeof payload === "object" && typeof (payload as SqsPayload).body === "string") {
      const { body, attributes } = payload as SqsPayload;
      return { body, attributes: attributes ?? {} };
    }
  }
  return { body: row.payload, attributes: {} };
}

/** The characters SQS allows in a message body: #x9 #xA #xD, #x20-#xD7FF, #xE000-#xFFFD, #x10000-#x10FFFF. */
const INVALID_BODY_CHAR = /[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/u;

/** Attribute names: SQS's rule (letters, digits, '_', '-', '.'; no leading/trailing '.', no '..', no
 * AWS./Amazon. prefix), at most 256 characters. */
const ATTRIBUTE_NAME =
  /^(?!\.)(?!.*\.\.)(?!.*\.$)(?![Aa][Ww][Ss]\.)(?![Aa][Mm][Aa][Zz][Oo][Nn]\.)[A-Za-z0-9_.-]{1,256}$/;

const encoder = new TextEncoder();

/**
 * Checks a message body and its attributes as SQS does and returns the payload to store. Sizes: body
 * plus attribute names, types and values at most SQS_MAX_MESSAGE_BYTES, and the stored JSON at most
 * MAX_PAYLOAD_BYTES.
 *
 * @example
 * const payload = sqsPayload("hello", { color: { DataType: "String", StringValue: "blue" } });
 */
export function sqsPayload(body: string, attributes: MessageAttributes | undefined): SqsPayload {
  if (body.length === 0) throw invalidParameter("MessageBody", "the message body must be at least one character");
  if (INVALID_BODY_CHAR.test(body)) {
    throw new SqsError(
      "InvalidMessageContents",
      "Invalid characters found in the message body (allowed: #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF)",
    );
  }
  let size = encoder.encode(body).byteLength;
  const names = Object.keys(attributes ?? {});
  if (names.length > SQS_MAX_MESSAGE_ATTRIBUTES) {
    throw invalidParameter("MessageAttributes", `at most ${SQS_MAX_MESSAGE_ATTRIBUTES} message attributes per message`);
  }
  for (const name of names) {
    const value = attributes![name]!;
    if (!ATTRIBUTE_NAME.test(name)) throw invalidParameter(`MessageAttribute.${name}`, "invalid attribute name");
    if (!/^(String|Number|Binary)(\.[A-Za-z0-9_.-]{1,200})?$/.test(value.DataType ?? "")) {
      throw invalidParameter(
        `MessageAttribute.${name}.DataType`,
        "must be String, Number or Binary, optionally with a .custom suffix",
      );
    }
    const binary = isBinaryType(value.DataType);
    const raw = binary ? value.BinaryValue : value.StringValue;
    if (raw === undefined || raw === "") {
      throw invalidParameter(
        `MessageAttribute.${name}`,
        `a ${value.DataType} attribute needs a non-empty ${binary ? "BinaryValue" : "StringValue"}`,
      );
    }
    if (value.DataType.startsWith("Number") && !Number.isFinite(Number(raw))) {
      throw invalidParameter(`MessageAttribute.${name}.StringValue`, "a Number attribute must hold a number");
    }
    let valueBytes: number;
    try {
      valueBytes = binary ? base64Bytes(raw).byteLength : encoder.encode(raw).byteLength;
    } catch {
      throw invalidParameter(`MessageAttribute.${name}.BinaryValue`, "not base64");
    }
    size += encoder.encode(name).byteLength + encoder.encode(value.DataType).byteLength + valueBytes;
  }
  if (size > SQS_MAX_MESSAGE_BYTES) {
    throw invalidParameter(
      "MessageBody",
      `Message must be shorter than ${SQS_MAX_MESSAGE_BYTES} bytes (body and attributes: ${size} bytes)`,
    );
  }
  const payload: SqsPayload =
    names.length > 0
      ? {
          body,
          attributes: Object.fromEntries(
            names.map((n) => {
              const v = attributes![n]!;
              const keep: MessageAttributeValue = { DataType: v.DataType };
              if (isBinaryType(v.DataType)) keep.BinaryValue = v.BinaryValue;
              else keep.StringValue = v.StringValue;
              return [n, keep];
            }),
          ),
        }
      : { body };
  const stored = jsonBytes(payload);
  if (stored > MAX_PAYLOAD_BYTES) {
    throw invalidParameter(
      "MessageBody",
      `stored as JSON the message is ${stored} bytes; edgeq payloads are limited to ${MAX_PAYLOAD_BYTES} bytes (characters JSON escapes count more than once)`,
    );
  }
  return payload;
}

/**
 * The attributes a receive asked for (MessageAttributeNames: "All", ".*", exact names, or "prefix.*").
 *
 * @example
 * selectAttributes(attrs, ["color", "trace.*"]);
 */
export function selectAttributes(attributes: MessageAttributes, wanted: string[] | undefined): MessageAttributes {
  if (!wanted || wanted.length === 0) return {};
  const all = wanted.includes("All") || wanted.includes(".*");
  const picked = Object.entries(attributes).filter(
    ([name]) => all || wanted.some((w) => (w.endsWith(".*") ? name.startsWith(w.slice(0, -1)) : w === name)),
  );
  return Object.fromEntries(picked);
}
