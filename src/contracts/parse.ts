import type { z } from "zod";
import { describeZodError } from "./describe-zod-error";
import { EdgeqError } from "./errors";

/**
 * A value checked against one of the API's schemas outside HTTP (an RPC method's own argument): the parsed
 * value, or `invalid_request` naming the field — the same words the HTTP API answers with.
 *
 * @example
 * const paused = parseWire(z.boolean(), input, "paused");
 */
export function parseWire<S extends z.ZodType>(schema: S, value: unknown, source: string): z.infer<S> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new EdgeqError("invalid_request", describeZodError(parsed.error, source));
  return parsed.data;
}
