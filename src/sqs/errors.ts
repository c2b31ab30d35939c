/**
 * The SQS endpoint's errors: one table of the SQS error codes it answers, with the HTTP status and the
 * legacy query-protocol code SQS sends in `x-amzn-query-error` (the SDKs read that header first to pick
 * the exception class: `AWS.SimpleQueueService.NonExistentQueue` becomes `QueueDoesNotExist`). Statuses
 * and query codes are the ones `@aws-sdk/client-sqs` models; the rest are AWS's common errors.
 *
 * @example
 * throw new SqsError("QueueDoesNotExist", `the queue ${name} does not exist`);
 */
export const SQS_ERRORS = {
  QueueDoesNotExist: { status: 400, query: "AWS.SimpleQueueService.NonExistentQueue" },
  QueueNameExists: { status: 400, query: "QueueAlreadyExists" },
  ReceiptHandleIsInvalid: { status: 404, query: "ReceiptHandleIsInvalid" },
  MessageNotInflight: { status: 400, query: "AWS.SimpleQueueService.MessageNotInflight" },
  BatchEntryIdsNotDistinct: { status: 400, query: "AWS.SimpleQueueService.BatchEntryIdsNotDistinct" },
  EmptyBatchRequest: { status: 400, query: "AWS.SimpleQueueService.EmptyBatchRequest" },
  TooManyEntriesInBatchRequest: { status: 400, query: "AWS.SimpleQueueService.TooManyEntriesInBatchRequest" },
  InvalidBatchEntryId: { status: 400, query: "AWS.SimpleQueueService.InvalidBatchEntryId" },
  InvalidAttributeName: { status: 400, query: "InvalidAttributeName" },
  InvalidAttributeValue: { status: 400, query: "InvalidAttributeValue" },
  InvalidMessageContents: { status: 400, query: "InvalidMessageContents" },
  InvalidParameterValue: { status: 400, query: "InvalidParameterValue" },
  MissingParameter: { status: 400, query: "MissingParameter" },
  InvalidAction: { status: 400, query: "InvalidAction" },
  SerializationException: { status: 400, query: "SerializationException" },
  RequestThrottled: { status: 403, query: "RequestThrottled" },
  // Authentication (AWS's common errors).
  MissingAuthenticationToken: { status: 403, query: "MissingAuthenticationToken" },
  IncompleteSignature: { status: 400, query: "IncompleteSignature" },
  InvalidClientTokenId: { status: 403, query: "InvalidClientTokenId" },
  SignatureDoesNotMatch: { status: 403, query: "SignatureDoesNotMatch" },
  RequestExpired: { status: 400, query: "RequestExpired" },
  RequestEntityTooLarge: { status: 413, query: "RequestEntityTooLarge" },
  ServiceUnavailable: { status: 503, query: "ServiceUnavailable" },
  InternalError: { status: 500, query: "InternalError" },
} as const satisfies Record<string, { status: number; query: string }>;

export type SqsErrorCode = keyof typeof SQS_ERRORS;

/** An error an SQS caller can act on, answered with its SQS code and status. */
export class SqsError extends Error {
  override readonly name = "SqsError";
  constructor(
    readonly code: SqsErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/** `InvalidParameterValue` naming the parameter, as SQS words it. */
export function invalidParameter(parameter: string, reason: string): SqsError {
  return new SqsError("InvalidParameterValue", `Value for parameter ${parameter} is invalid. Reason: ${reason}`);
}

/** Whether the error is the caller's (Sender) or the service's (Receiver), as SQS reports it. */
export function faultOf(code: SqsErrorCode): "Sender" | "Receiver" {
  return SQS_ERRORS[code].status >= 500 ? "Receiver" : "Sender";
}

/**
 * The JSON-protocol error response: `{ "__type": "com.amazonaws.sqs#<Code>", "message" }` with the
 * query-compatible code in `x-amzn-query-error` ("<query code>;Sender").
 */
export function sqsErrorResponse(error: SqsError, requestId: string): Response {
  const entry = SQS_ERRORS[error.code];
  return new Response(JSON.stringify({ __type: `com.amazonaws.sqs#${error.code}`, message: error.message }), {
    status: entry.status,
    headers: {
      "Content-Type": "application/x-amz-json-1.0",
      "x-amzn-query-error": `${entry.query};${faultOf(error.code)}`,
      "x-amzn-RequestId": requestId,
    },
  });
}
