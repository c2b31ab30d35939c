import type { z } from "zod";
import { EnqueueBatchBody, EnqueueBody, NewTaskSchema } from "./api";
import { describeZodError } from "./describe-zod-error";
import { EdgeqError } from "./errors";

/**
 * A value checked against one of the API's schemas outside HTTP (the Workers RPC binding): the parsed
 * value, or `invalid_request` naming the field — the same words the HTTP API answers with.
 *
 * @example
 * const body = parseWire(LeaseBody, input, "body");
 */
export function parseWire<S extends z.ZodType>(schema: S, value: unknown, source: string): z.infer<S> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new EdgeqError("invalid_request", describeZodError(parsed.error, source));
  return parsed.data;
}

/**
 * An enqueue's body — one task or `{ tasks: [...] }` — explained, when it fails, against the option the
 * caller meant (a batch when it has `tasks`), so a bad `tasks[2].priority` is named instead of zod's closest
 * union option.
 *
 * @example
 * const body = parseEnqueueBody({ tasks: [{ payload: {} }] });
 */
export function parseEnqueueBody(value: unknown): z.infer<typeof EnqueueBody> {
  const isBatch = typeof value === "object" && value !== null && !Array.isArray(value) && "tasks" in value;
  return parseWire(isBatch ? EnqueueBatchBody : NewTaskSchema, value, "body");
}
