import { QUEUE_NAME_PATTERN, QUEUE_NAME_RULE } from "../contracts/limits";
import { SqsError, invalidParameter } from "./errors";

/** The account id in queue URLs and ARNs. edgeq has no AWS accounts; twelve zeros is the placeholder
 * local SQS look-alikes use too, so tools that parse it find the shape they expect. */
export const SQS_ACCOUNT_ID = "000000000000";

/**
 * A queue's URL: `<origin of the request>/sqs/000000000000/<queue>`, so an SDK pointed at the Worker gets
 * URLs on the same host (and, with useQueueUrlAsEndpoint, would send to the same Worker).
 *
 * @example
 * queueUrl("https://edgeq.example.workers.dev", "emails"); // ".../sqs/000000000000/emails"
 */
export function queueUrl(origin: string, queue: string): string {
  return `${origin}/sqs/${SQS_ACCOUNT_ID}/${queue}`;
}

/** The queue's ARN, in the region the caller signed for. */
export function queueArn(region: string, queue: string): string {
  return `arn:aws:sqs:${region}:${SQS_ACCOUNT_ID}:${queue}`;
}

/** A queue name as SQS callers send it to CreateQueue / GetQueueUrl: edgeq's QUEUE_NAME_PATTERN. */
export function checkQueueName(name: unknown, parameter = "QueueName"): string {
  if (typeof name !== "string" || name.length === 0) {
    throw new SqsError("MissingParameter", `The request must contain the parameter ${parameter}.`);
  }
  if (!QUEUE_NAME_PATTERN.test(name)) throw invalidParameter(parameter, `edgeq queue names are ${QUEUE_NAME_RULE}`);
  return name;
}

/**
 * The queue a QueueUrl names: its last path segment (any host: the URL may have been built behind a
 * proxy). A bare queue name is accepted too. Anything else does not name a queue: QueueDoesNotExist.
 *
 * @example
 * queueFromUrl("http://127.0.0.1:8787/sqs/000000000000/emails"); // "emails"
 */
export function queueFromUrl(url: unknown): string {
  if (typeof url !== "string" || url.length === 0) {
    throw new SqsError("MissingParameter", "The request must contain the parameter QueueUrl.");
  }
  let name = url;
  if (url.includes("/")) {
    let path: string;
    try {
      path = new URL(url).pathname;
    } catch {
      path = url;
    }
    name =
      path
        .split("/")
        .filter((s) => s.length > 0)
        .at(-1) ?? "";
  }
  if (!QUEUE_NAME_PATTERN.test(name)) {
    throw new SqsError("QueueDoesNotExist", `The specified queue does not exist: ${url}`);
  }
  return name;
}
