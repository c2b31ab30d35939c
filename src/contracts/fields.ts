import * as z from "zod";
import { jsonValueIssue } from "./describe-zod-error";
import { jsonValueProblem } from "./json-value";
import { MAX_JSON_DEPTH, MAX_PAYLOAD_BYTES, MAX_PRIORITY, QUEUE_NAME_PATTERN, QUEUE_NAME_RULE } from "./limits";
import { TASK_STATES } from "./states";

/**
 * Field schemas shared by the task contract (./task.ts) and the HTTP request schemas
 * (src/contracts/api.ts). They carry OpenAPI metadata (`.openapi()` from @hono/zod-openapi's `z`) but no
 * HTTP code, so the engine may take its types from them.
 */

export const QueueName = z.string().regex(QUEUE_NAME_PATTERN, QUEUE_NAME_RULE).meta({ example: "emails" });

export const TaskType = z.string().regex(/^[A-Za-z0-9._:-]{1,64}$/, "1-64 letters, digits, '.', '_', ':' or '-'");

export const TaskStateSchema = z.enum(TASK_STATES);

/** A task's priority: higher runs first (the bound is MAX_PRIORITY in src/contracts/limits.ts). */
export const Priority = z.number().int().min(-MAX_PRIORITY).max(MAX_PRIORITY);

/**
 * A string stored exactly as sent. JSON's `\ud800` escape can carry a lone UTF-16 surrogate, which is not
 * Unicode: D1 would store it as U+FFFD, so it is refused, naming the field.
 *
 * @example
 * const Message = Text().max(1000);
 */
export const Text = () =>
  z.string().refine((s) => s.isWellFormed(), "the string contains a lone UTF-16 surrogate (not valid Unicode)");

/** A non-empty stored string of at most `max` characters. */
export const ShortText = (max: number) => Text().min(1).max(max);

/**
 * Caller JSON stored exactly as sent (payload, result, checkpoint, `then` payloads): nested at most
 * MAX_JSON_DEPTH levels, numbers finite, strings and keys well-formed (see `jsonValueProblem`). The issue
 * names the place inside the value, e.g. `tasks[3].payload.items[0]: …`.
 *
 * @example
 * const Payload = storedJson(z.unknown()).optional();
 */
export const storedJson = <T extends z.ZodType>(schema: T) =>
  schema.superRefine((value, ctx) => {
    const problem = jsonValueProblem(value, "");
    if (problem !== null) ctx.addIssue(jsonValueIssue(problem));
  });

/** What a stored JSON value may be, for the document. */
export const STORED_JSON = `any JSON, at most ${MAX_PAYLOAD_BYTES} bytes serialised and ${MAX_JSON_DEPTH} levels deep`;

/** Longest task key: SQS's MessageGroupId allows 128 characters, and a key is one. */
export const MAX_TASK_KEY_CHARS = 128;

/**
 * A task's key for flow control (a tenant, an API account: docs/flow-control.md): 1-128 printable ASCII
 * characters without spaces — what SQS allows in a MessageGroupId, so every group maps to a key unchanged.
 */
export const TaskKey = z
  .string()
  .min(1)
  .max(MAX_TASK_KEY_CHARS)
  .regex(/^[\x21-\x7e]+$/, "a key is printable ASCII without spaces (as an SQS MessageGroupId)");
