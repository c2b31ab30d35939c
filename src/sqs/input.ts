import * as z from "zod";
import { SQS_MAX_BATCH_ENTRIES } from "../contracts/limits";
import { SqsError } from "./errors";

/**
 * Parses an operation's input with its zod schema (the trust boundary). A missing required member is
 * MissingParameter, any other problem InvalidParameterValue, both naming the parameter as SQS does.
 *
 * @example
 * const { QueueUrl } = parseInput(z.object({ QueueUrl: z.string() }), input);
 */
export function parseInput<T extends z.ZodType>(schema: T, input: unknown): z.infer<T> {
  const parsed = schema.safeParse(input ?? {});
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const parameter = issue.path.join(".") || "input";
  // zod does not carry the offending input in its issues: look the member up in what was sent.
  const sent = issue.path.reduce<unknown>(
    (value, key) =>
      value !== null && typeof value === "object" ? (value as Record<PropertyKey, unknown>)[key] : undefined,
    input,
  );
  if (issue.code === "invalid_type" && sent === undefined) {
    throw new SqsError("MissingParameter", `The request must contain the parameter ${parameter}.`);
  }
  throw new SqsError("InvalidParameterValue", `Value for parameter ${parameter} is invalid. Reason: ${issue.message}`);
}

/** An integer parameter within [min, max]. */
export const intIn = (min: number, max: number) => z.number().int().min(min).max(max);

/** SQS's rule for batch entry ids: up to 80 letters, digits, '-' and '_'. */
const ENTRY_ID = /^[A-Za-z0-9_-]{1,80}$/;

/**
 * The checks every *Batch call makes on its entries before any is applied: not empty, at most
 * SQS_MAX_BATCH_ENTRIES, every Id well formed and distinct — each with SQS's own error code.
 *
 * @example
 * checkBatchEntries(input.Entries);
 */
export function checkBatchEntries(entries: Array<{ Id: string }>): void {
  if (entries.length === 0) {
    throw new SqsError("EmptyBatchRequest", "There should be at least one entry in the request.");
  }
  if (entries.length > SQS_MAX_BATCH_ENTRIES) {
    throw new SqsError(
      "TooManyEntriesInBatchRequest",
      `Maximum number of entries per request are ${SQS_MAX_BATCH_ENTRIES}. You have sent ${entries.length}.`,
    );
  }
  const seen = new Set<string>();
  for (const entry of entries) {
    if (!ENTRY_ID.test(entry.Id)) {
      throw new SqsError(
        "InvalidBatchEntryId",
        `A batch entry id can only contain alphanumeric characters, hyphens and underscores. It can be at most 80 letters long (got "${entry.Id.slice(0, 100)}").`,
      );
    }
    if (seen.has(entry.Id)) throw new SqsError("BatchEntryIdsNotDistinct", `Id ${entry.Id} repeated.`);
    seen.add(entry.Id);
  }
}

/** One failed batch entry, as SQS reports it. */
export interface BatchFailure {
  Id: string;
  SenderFault: boolean;
  Code: string;
  Message: string;
}

/** A failed entry from an SqsError. */
export function batchFailure(id: string, error: SqsError): BatchFailure {
  return { Id: id, SenderFault: true, Code: error.code, Message: error.message };
}
