import {
  MAX_ATTEMPTS_LIMIT,
  MAX_VISIBILITY_TIMEOUT_S,
  MIN_VISIBILITY_TIMEOUT_S,
  SQS_MAX_DELAY_S,
  SQS_MAX_MESSAGE_BYTES,
  SQS_MAX_RETENTION_S,
  SQS_MIN_RETENTION_S,
  MAX_WAIT_S,
} from "../contracts/limits";
import { SqsError } from "./errors";
import type { SqsQueue, SqsQueueCounts, SqsQueuePatch } from "./queue-registry";
import { queueArn } from "./queue-url";

/**
 * SQS queue attributes <-> edgeq queue config:
 * - VisibilityTimeout -> visibility_timeout_s (edgeq's leases last at least 1 s: 0 is refused);
 * - MessageRetentionPeriod -> retention_s (how long *finished* tasks are kept; edgeq never drops a message
 *   nobody received);
 * - RedrivePolicy.maxReceiveCount -> max_attempts (at most MAX_ATTEMPTS_LIMIT); the message then ends in
 *   the queue's own dead state, whatever deadLetterTargetArn says: GetQueueAttributes reports the queue's
 *   own ARN as the target. An empty RedrivePolicy means "no redrive": MAX_ATTEMPTS_LIMIT receives;
 * - DelaySeconds, ReceiveMessageWaitTimeSeconds -> the queue's SQS-only settings;
 * - MaximumMessageSize is fixed at SQS_MAX_MESSAGE_BYTES (setting it to anything else is refused);
 * - FifoQueue / ContentBasedDeduplication follow the name (`.fifo`), as SQS requires.
 */

/** Every attribute GetQueueAttributes can answer, in SQS's order. */
export const QUEUE_ATTRIBUTE_NAMES = [
  "QueueArn",
  "ApproximateNumberOfMessages",
  "ApproximateNumberOfMessagesNotVisible",
  "ApproximateNumberOfMessagesDelayed",
  "CreatedTimestamp",
  "LastModifiedTimestamp",
  "VisibilityTimeout",
  "MaximumMessageSize",
  "MessageRetentionPeriod",
  "DelaySeconds",
  "ReceiveMessageWaitTimeSeconds",
  "RedrivePolicy",
  "FifoQueue",
  "ContentBasedDeduplication",
] as const;

/** Whether the queue is FIFO: SQS requires the `.fifo` suffix on exactly those. */
export function isFifo(name: string): boolean {
  return name.endsWith(".fifo");
}

function integerIn(name: string, value: string, min: number, max: number, why = ""): number {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isInteger(n) || n < min || n > max) {
    throw new SqsError(
      "InvalidAttributeValue",
      `Invalid value for the parameter ${name}: ${value} (${min} to ${max}${why})`,
    );
  }
  return n;
}

/**
 * The config change a CreateQueue or SetQueueAttributes asks for. Unknown or read-only names are
 * InvalidAttributeName; out-of-range values InvalidAttributeValue.
 *
 * @example
 * parseQueueAttributes("jobs", { VisibilityTimeout: "60", RedrivePolicy: '{"maxReceiveCount":"5","deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:jobs-dlq"}' });
 */
export function parseQueueAttributes(queue: string, attributes: Record<string, string>): SqsQueuePatch {
  const patch: SqsQueuePatch = { config: {} };
  for (const [name, value] of Object.entries(attributes)) {
    switch (name) {
      case "VisibilityTimeout":
        patch.config.visibility_timeout_s = integerIn(
          name,
          value,
          MIN_VISIBILITY_TIMEOUT_S,
          MAX_VISIBILITY_TIMEOUT_S,
          "; edgeq leases last at least 1 s",
        );
        break;
      case "MessageRetentionPeriod":
        patch.config.retention_s = integerIn(name, value, SQS_MIN_RETENTION_S, SQS_MAX_RETENTION_S);
        break;
      case "DelaySeconds":
        patch.delayS = integerIn(name, value, 0, SQS_MAX_DELAY_S);
        break;
      case "ReceiveMessageWaitTimeSeconds":
        patch.receiveWaitS = integerIn(name, value, 0, MAX_WAIT_S);
        break;
      case "MaximumMessageSize":
        integerIn(name, value, SQS_MAX_MESSAGE_BYTES, SQS_MAX_MESSAGE_BYTES, "; edgeq's message size is fixed");
        break;
      case "RedrivePolicy":
        patch.config.max_attempts = parseRedrivePolicy(value);
        break;
      case "FifoQueue":
        if (value !== String(isFifo(queue))) {
          throw new SqsError(
            "InvalidAttributeValue",
            `Invalid value for the parameter FifoQueue: ${value} (a FIFO queue's name ends in .fifo, and only such queues are FIFO)`,
          );
        }
        break;
      case "ContentBasedDeduplication":
        if (!isFifo(queue) || value !== "true") {
          throw new SqsError(
            "InvalidAttributeValue",
            "ContentBasedDeduplication: edgeq FIFO queues always deduplicate by content when no MessageDeduplicationId is sent (true); standard queues take none",
          );
        }
        break;
      default:
        throw new SqsError("InvalidAttributeName", `Unknown or unsupported attribute ${name}`);
    }
  }
  return patch;
}

/** maxReceiveCount of a RedrivePolicy (JSON text); "" clears it (MAX_ATTEMPTS_LIMIT receives). */
function parseRedrivePolicy(value: string): number {
  if (value.trim() === "") return MAX_ATTEMPTS_LIMIT;
  let policy: unknown;
  try {
    policy = JSON.parse(value);
  } catch {
    throw new SqsError("InvalidAttributeValue", "Invalid value for the parameter RedrivePolicy: not JSON");
  }
  const count = (policy as { maxReceiveCount?: unknown } | null)?.maxReceiveCount;
  if (count === undefined) {
    throw new SqsError(
      "InvalidAttributeValue",
      "Value for parameter RedrivePolicy is invalid. Reason: Redrive policy does not contain mandatory attribute: maxReceiveCount.",
    );
  }
  return integerIn("RedrivePolicy.maxReceiveCount", String(count), 1, MAX_ATTEMPTS_LIMIT, " in edgeq");
}

/**
 * The queue's attributes as SQS renders them (every value a string; timestamps in epoch seconds), limited
 * to `wanted` ("All" or names; an unknown name is InvalidAttributeName).
 *
 * @example
 * renderQueueAttributes(queue, counts, "us-east-1", ["All"]);
 */
export function renderQueueAttributes(
  queue: SqsQueue,
  counts: SqsQueueCounts,
  region: string,
  wanted: string[],
): Record<string, string> {
  for (const name of wanted) {
    if (name !== "All" && !(QUEUE_ATTRIBUTE_NAMES as readonly string[]).includes(name)) {
      throw new SqsError("InvalidAttributeName", `Unknown Attribute ${name}.`);
    }
  }
  const seconds = String(Math.floor((queue.updatedAt ?? 0) / 1000));
  const all: Record<(typeof QUEUE_ATTRIBUTE_NAMES)[number], string | undefined> = {
    QueueArn: queueArn(region, queue.name),
    ApproximateNumberOfMessages: String(counts.visible),
    ApproximateNumberOfMessagesNotVisible: String(counts.inFlight),
    ApproximateNumberOfMessagesDelayed: String(counts.delayed),
    // edgeq keeps one timestamp per config: when it was last written (0 for a queue without one).
    CreatedTimestamp: seconds,
    LastModifiedTimestamp: seconds,
    VisibilityTimeout: String(queue.config.visibility_timeout_s),
    MaximumMessageSize: String(SQS_MAX_MESSAGE_BYTES),
    // A queue of edgeq's own keeping no finished task (retention_s 0) shows SQS's least: 60 s.
    MessageRetentionPeriod: String(Math.max(queue.config.retention_s, SQS_MIN_RETENTION_S)),
    DelaySeconds: String(queue.delayS),
    ReceiveMessageWaitTimeSeconds: String(queue.receiveWaitS),
    RedrivePolicy: JSON.stringify({
      deadLetterTargetArn: queueArn(region, queue.name),
      maxReceiveCount: queue.config.max_attempts,
    }),
    FifoQueue: isFifo(queue.name) ? "true" : undefined,
    ContentBasedDeduplication: isFifo(queue.name) ? "true" : undefined,
  };
  const names = wanted.includes("All") ? QUEUE_ATTRIBUTE_NAMES : wanted;
  const out: Record<string, string> = {};
  for (const name of names) {
    const value = all[name as keyof typeof all];
    if (value !== undefined) out[name] = value;
  }
  return out;
}

/**
 * Whether an existing queue already has the attributes a CreateQueue asks for (SQS then answers its URL;
 * otherwise QueueNameExists).
 */
export function sameAttributes(queue: SqsQueue, patch: SqsQueuePatch): boolean {
  const c = queue.config;
  return (
    (patch.config.visibility_timeout_s === undefined || patch.config.visibility_timeout_s === c.visibility_timeout_s) &&
    (patch.config.retention_s === undefined || patch.config.retention_s === c.retention_s) &&
    (patch.config.max_attempts === undefined || patch.config.max_attempts === c.max_attempts) &&
    (patch.delayS === undefined || patch.delayS === queue.delayS) &&
    (patch.receiveWaitS === undefined || patch.receiveWaitS === queue.receiveWaitS)
  );
}
