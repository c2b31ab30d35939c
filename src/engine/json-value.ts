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
  return encoder.encode(JSON.stringify(value ?? null)).byteLength;
}

/**
 * Why a caller's JSON (payload, result, checkpoint) cannot be stored as sent, as the error to answer with:
 * over MAX_PAYLOAD_BYTES is `payload_too_large`; too deep, a non-finite number or a lone surrogate is
 * `invalid_request`. `field` names it in the message (prefixed by `prefix`, e.g. "task 01H…: ").
 *
 * @example
 * const error = storedJsonError(result, "result", `task ${id}: `); // null when it can be stored
 */
export function storedJsonError(value: unknown, field: string, prefix = ""): EdgeqError | null {
  const bytes = jsonBytes(value);
  if (bytes > MAX_PAYLOAD_BYTES) {
    return new EdgeqError(
      "payload_too_large",
      `${prefix}${field} is ${bytes} bytes of JSON; the limit is ${MAX_PAYLOAD_BYTES} bytes`,
    );
  }
  const problem = jsonValueProblem(value ?? null, field);
  return problem ? new EdgeqError("invalid_request", `${prefix}${problem}`) : null;
}
