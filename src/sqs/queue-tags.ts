import * as z from "zod";
import { SQS_MAX_TAG_KEY_CHARS, SQS_MAX_TAG_VALUE_CHARS, SQS_MAX_TAGS } from "../contracts/limits";
import type { SqsContext } from "./context";
import { invalidParameter, SqsError } from "./errors";
import { parseInput } from "./input";
import { addSqsTags, removeSqsTags } from "./queue-registry";
import { registryStoreForWrite, requireQueue } from "./require-queue";

/**
 * Queue tags: TagQueue, UntagQueue, ListQueueTags (and CreateQueue's `tags`). As in SQS they mean nothing
 * to the queue — Terraform, the AWS CLI and cost scripts set and read them — so edgeq stores them with the
 * queue's config (`queues.sqs_tags`, on the database holding its SQS attributes) and lists them back.
 * SQS's quotas apply: at most SQS_MAX_TAGS per queue, keys of 1 to SQS_MAX_TAG_KEY_CHARS characters, values
 * of at most SQS_MAX_TAG_VALUE_CHARS, and no key in the reserved `aws:` prefix. Tags go with the queue when
 * it is deleted.
 */

/** The prefix AWS reserves for its own tags: a user's tag may not use it. */
const RESERVED_PREFIX = "aws:";

const TagMap = z.record(z.string(), z.string());
const TagQueueInput = z.object({ QueueUrl: z.string(), Tags: TagMap });
const UntagQueueInput = z.object({ QueueUrl: z.string(), TagKeys: z.array(z.string()) });
const ListQueueTagsInput = z.object({ QueueUrl: z.string() });

/** Unicode characters (code points), as SQS counts a tag's length — not UTF-16 units. */
const chars = (text: string) => [...text].length;

/** A tag key's problem, or null: 1 to SQS_MAX_TAG_KEY_CHARS characters, outside the reserved prefix. */
function keyProblem(key: string): string | null {
  if (chars(key) < 1 || chars(key) > SQS_MAX_TAG_KEY_CHARS) {
    return `Tag keys must be between 1 and ${SQS_MAX_TAG_KEY_CHARS} characters in length.`;
  }
  if (key.toLowerCase().startsWith(RESERVED_PREFIX)) return `Tag keys may not begin with "${RESERVED_PREFIX}".`;
  return null;
}

/**
 * Checks tags a call adds (TagQueue's `Tags`, CreateQueue's `tags`): at least one, at most SQS_MAX_TAGS, each
 * key and value within SQS's lengths. Each refusal is SQS's MissingParameter or InvalidParameterValue naming
 * the parameter.
 *
 * @example
 * checkTags({ team: "growth" }, "Tags");
 */
export function checkTags(tags: Record<string, string>, parameter: "Tags" | "tags"): void {
  const entries = Object.entries(tags);
  if (entries.length === 0)
    throw new SqsError("MissingParameter", `The request must contain the parameter ${parameter}.`);
  if (entries.length > SQS_MAX_TAGS) {
    throw invalidParameter(parameter, `Too many tags: at most ${SQS_MAX_TAGS} per queue (got ${entries.length}).`);
  }
  for (const [key, value] of entries) {
    const problem = keyProblem(key);
    if (problem) throw invalidParameter(parameter, problem);
    if (chars(value) > SQS_MAX_TAG_VALUE_CHARS) {
      throw invalidParameter(parameter, `Tag values must be at most ${SQS_MAX_TAG_VALUE_CHARS} characters in length.`);
    }
  }
}

/**
 * Adds tags to an existing queue (a key it has already takes the new value), unless the queue would carry
 * more than SQS_MAX_TAGS: then InvalidParameterValue and nothing changes.
 *
 * @example
 * await addTags(ctx, "emails", { team: "growth" }, "Tags");
 */
export async function addTags(
  ctx: SqsContext,
  name: string,
  tags: Record<string, string>,
  parameter: "Tags" | "tags",
): Promise<void> {
  if (!(await addSqsTags(await registryStoreForWrite(ctx, name), name, tags, ctx.now))) {
    throw invalidParameter(parameter, `Too many tags added for queue ${name}: at most ${SQS_MAX_TAGS} per queue.`);
  }
}

/** TagQueue: adds or overwrites tags on a queue that exists. */
export async function tagQueue(input: unknown, ctx: SqsContext) {
  const request = parseInput(TagQueueInput, input);
  const queue = await requireQueue(ctx, request.QueueUrl);
  checkTags(request.Tags, "Tags");
  await addTags(ctx, queue.name, request.Tags, "Tags");
  return {};
}

/** UntagQueue: removes tags by key (a key the queue does not have is ignored, as SQS). */
export async function untagQueue(input: unknown, ctx: SqsContext) {
  const request = parseInput(UntagQueueInput, input);
  const queue = await requireQueue(ctx, request.QueueUrl);
  if (request.TagKeys.length === 0) {
    throw new SqsError("MissingParameter", "The request must contain the parameter TagKeys.");
  }
  for (const key of request.TagKeys) {
    if (chars(key) < 1 || chars(key) > SQS_MAX_TAG_KEY_CHARS) {
      throw invalidParameter(
        "TagKeys",
        `Tag keys must be between 1 and ${SQS_MAX_TAG_KEY_CHARS} characters in length.`,
      );
    }
  }
  await removeSqsTags(await registryStoreForWrite(ctx, queue.name), queue.name, request.TagKeys);
  return {};
}

/** ListQueueTags: the queue's tags; a queue without any answers no `Tags` member, as SQS. */
export async function listQueueTags(input: unknown, ctx: SqsContext) {
  const queue = await requireQueue(ctx, parseInput(ListQueueTagsInput, input).QueueUrl);
  return Object.keys(queue.tags).length === 0 ? {} : { Tags: queue.tags };
}
