import { Hono, type Context } from "hono";
import { openDb } from "../db/client";
import { EdgeqError } from "../engine/errors";
import { SQS_MAX_REQUEST_BYTES } from "../engine/limits";
import type { AppEnv } from "../http/app-env";
import type { SqsContext } from "./context";
import { sqsCredentials, type SqsEnv } from "./credentials";
import { SqsError, sqsErrorResponse } from "./errors";
import { SQS_OPERATIONS } from "./operations";
import { verifySigV4 } from "./sigv4";

const TARGET_PREFIX = "AmazonSQS.";

/** An engine error met on the SQS path, in SQS's terms. */
function fromEngineError(error: EdgeqError): SqsError {
  switch (error.code) {
    case "invalid_request":
    case "payload_too_large":
    case "dedupe_conflict":
      return new SqsError("InvalidParameterValue", error.message);
    case "rate_limited":
      return new SqsError("RequestThrottled", error.message);
    case "not_found":
      return new SqsError("QueueDoesNotExist", error.message);
    default:
      return new SqsError("InternalError", "internal error");
  }
}

/** Any failure as an SqsError; unexpected ones are logged and hidden (InternalError). */
function toSqsError(error: unknown, operation: string): SqsError {
  if (error instanceof SqsError) return error;
  if (error instanceof EdgeqError) return fromEngineError(error);
  if (error instanceof Error && /overloaded/i.test(error.message)) {
    return new SqsError("RequestThrottled", "the database is overloaded; retry after a second");
  }
  console.error("sqs: unhandled error in", operation, error);
  return new SqsError("InternalError", "internal error");
}

/**
 * One SQS request over the AWS JSON 1.0 protocol: `POST` with `X-Amz-Target: AmazonSQS.<Operation>` and a
 * JSON body, signed with SigV4 (verified against SQS_CREDENTIALS before the body is parsed; the bearer
 * token plays no part here). Answers the operation's JSON output, or SQS's error shape.
 */
async function handleSqs(c: Context<AppEnv>): Promise<Response> {
  const requestId = crypto.randomUUID();
  const target = c.req.header("x-amz-target") ?? "";
  const operationName = target.startsWith(TARGET_PREFIX) ? target.slice(TARGET_PREFIX.length) : target;
  try {
    const env = c.env as SqsEnv;
    const credentials = sqsCredentials(env);
    const declared = Number(c.req.header("content-length") ?? "0");
    if (declared > SQS_MAX_REQUEST_BYTES) {
      throw new SqsError("RequestEntityTooLarge", `requests are limited to ${SQS_MAX_REQUEST_BYTES} bytes`);
    }
    const body = new Uint8Array(await c.req.arrayBuffer());
    if (body.byteLength > SQS_MAX_REQUEST_BYTES) {
      throw new SqsError("RequestEntityTooLarge", `requests are limited to ${SQS_MAX_REQUEST_BYTES} bytes`);
    }
    const url = new URL(c.req.url);
    const now = Date.now();
    const { accessKeyId, region } = await verifySigV4(
      { method: c.req.method, path: url.pathname, query: url.search.slice(1), headers: c.req.raw.headers, body },
      (id) => credentials.get(id),
      now,
    );
    const operation = target.startsWith(TARGET_PREFIX) ? SQS_OPERATIONS[operationName] : undefined;
    if (!operation) {
      throw new SqsError(
        "InvalidAction",
        target === ""
          ? "send X-Amz-Target: AmazonSQS.<Operation> with Content-Type: application/x-amz-json-1.0 (the query protocol is not served)"
          : `The action ${operationName} is not valid for this endpoint.`,
      );
    }
    let input: unknown;
    try {
      input = body.byteLength === 0 ? {} : JSON.parse(new TextDecoder().decode(body));
    } catch {
      throw new SqsError("SerializationException", "the request body is not valid JSON");
    }
    if (input === null || typeof input !== "object" || Array.isArray(input)) {
      throw new SqsError("SerializationException", "the request body must be a JSON object");
    }
    const ctx: SqsContext = {
      db: openDb(env.DB),
      env,
      now,
      clock: () => Date.now(),
      origin: url.origin,
      region,
      accessKeyId,
      signal: c.req.raw.signal,
      waitUntil: (promise) => c.executionCtx.waitUntil(promise),
    };
    const output = await operation(input, ctx);
    return new Response(JSON.stringify(output), {
      status: 200,
      headers: { "Content-Type": "application/x-amz-json-1.0", "x-amzn-RequestId": requestId },
    });
  } catch (error) {
    return sqsErrorResponse(toSqsError(error, operationName), requestId);
  }
}

/**
 * The SQS-compatible endpoint: `POST /` and `POST /sqs` (point an SDK's `endpoint` at either), and
 * `POST /sqs/<account>/<queue>` (a queue URL, where SDKs using the queue URL as endpoint send).
 *
 * @example
 * app.route("/", sqsRoutes);
 */
export const sqsRoutes = new Hono<AppEnv>()
  .post("/", handleSqs)
  .post("/sqs", handleSqs)
  .post("/sqs/:account/:queue", handleSqs);
