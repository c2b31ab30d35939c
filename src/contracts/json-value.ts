import { EdgeqError } from "./errors";
import { MAX_JSON_DEPTH, MAX_PAYLOAD_BYTES } from "./limits";

/**
 * Why a JSON value cannot be stored exactly as sent, or null when it can. Checked at every boundary that
 * takes caller JSON (payload, result, checkpoint, `then` payloads) so nothing is changed silently:
 * - nesting deeper than MAX_JSON_DEPTH (SQLite's JSON functions would fail on it, a 500 before);
 * - a number that is not finite (`1e400` parses to Infinity, which JSON.stringify writes as `null`);
 * - a string or key with a lone UTF-16 surrogate (it would be stored as U+FFFD).
 * The message starts with `field` (e.g. `payload`, `tasks[3].result`) and names the path inside it.
 *
 * @example
 * jsonValueProblem({ a: [1e400] }, "payload"); // "payload.a[0]: 1e400 is not a finite number …"
 */
export function jsonValueProblem(value: unknown, field: string): string | null {
  // Iterative walk: a hostile 100,000-level document must not overflow the stack before it is refused.
  const stack: Array<{ value: unknown; path: string; depth: number }> = [{ value, path: field, depth: 0 }];
  while (stack.length > 0) {
    const { value: v, path, depth } = stack.pop()!;
    if (typeof v === "number") {
      if (!Number.isFinite(v)) return `${path}: a number too large to store exactly (not finite); send it as a string`;
    } else if (typeof v === "string") {
      if (!v.isWellFormed()) return `${path}: the string contains a lone UTF-16 surrogate (not valid Unicode)`;
    } else if (v !== null && typeof v === "object") {
      if (depth >= MAX_JSON_DEPTH) return `${path}: nested deeper than ${MAX_JSON_DEPTH} levels of arrays and objects`;
      if (Array.isArray(v)) {
        v.forEach((item, k) => stack.push({ value: item, path: `${path}[${k}]`, depth: depth + 1 }));
      } else {
        for (const [key, item] of Object.entries(v)) {
          if (!key.isWellFormed()) return `${path}: a key contains a lone UTF-16 surrogate (not valid Unicode)`;
          stack.push({ value: item, path: `${path}.${key}`, depth: depth + 1 });
        }
      }
    }
  }
  return null;
}

const encoder = new TextEncoder();

/** Bytes of `value` serialised as JSON (UTF-8), as D1 stores it. */
export function jsonBytes(value: unknown): number {
  return utf8Bytes(JSON.stringify(value ?? null));
}

/** Bytes of `text` in UTF-8. */
export function utf8Bytes(text: string): number {
  return encoder.encode(text).byteLength;
}

/**
 * Whether `json` (already serialised) is over `limit` bytes of UTF-8, and its size when it may be: a UTF-16
 * code unit is at most 3 bytes of UTF-8, so text of at most `limit / 3` code units is under it without
 * encoding (what nearly every payload is; encoding each of a 10,000-task enqueue's payloads cost ~1/3 of
 * its engine time here). Returns the exact byte count when over, else null.
 */
export function overBytes(json: string, limit: number): number | null {
  if (json.length * 3 <= limit) return null;
  const bytes = utf8Bytes(json);
  return bytes > limit ? bytes : null;
}

/**
 * Why a caller's JSON (payload, result, checkpoint) cannot be stored as sent, as the error to answer with:
 * over MAX_PAYLOAD_BYTES is `payload_too_large`; too deep, a non-finite number or a lone surrogate is
 * `invalid_request`. `field` names it in the message (prefixed by `prefix`, e.g. "task 01H…: "). `json`: the
 * value already serialised, when the caller has it (enqueue stores that very text).
 *
 * @example
 * const error = storedJsonError(result, "result", `task ${id}: `); // null when it can be stored
 */
export function storedJsonError(
  value: unknown,
  field: string,
  prefix = "",
  json = JSON.stringify(value ?? null),
): EdgeqError | null {
  const bytes = overBytes(json, MAX_PAYLOAD_BYTES);
  if (bytes !== null) {
    return new EdgeqError(
      "payload_too_large",
      `${prefix}${field} is ${bytes} bytes of JSON; the limit is ${MAX_PAYLOAD_BYTES} bytes`,
    );
  }
  const problem = jsonValueProblem(value ?? null, field);
  return problem ? new EdgeqError("invalid_request", `${prefix}${problem}`) : null;
}
