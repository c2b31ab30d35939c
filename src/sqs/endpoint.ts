import { Hono, type Context } from "hono";
import { allShards } from "../shards/shard-set";
import { queueRoute } from "../shards/queue-route";
import { openDb } from "../db/client";
import { rateLimitedIfOverloaded } from "../contracts/overloaded";
import { EdgeqError } from "../contracts/errors";
import { SQS_MAX_REQUEST_BYTES } from "../contracts/limits";
import { Effects } from "../effects/follow";
import type { ProcessorRegistry } from "../processors/registry";
import type { SqsContext } from "./context";
import { sqsCredentials, type SqsEnv } from "./credentials";
import { SqsError, sqsErrorResponse } from "./errors";
import { SQS_OPERATIONS } from "./operations";
import { queryErrorResponse, queryRequest, queryResponse } from "./query-protocol";
import { verifySigV4 } from "./sigv4";

const TARGET_PREFIX = "AmazonSQS.";

/** An engine error met on the SQS path, in SQS's terms. SQS has no 409: a conflict with stored state is the
 * closest it has, InvalidParameterValue (a message never carries a client's task id, so `id_in_other_queue`
 * cannot arise from SendMessage; it is mapped all the same rather than hidden as InternalError). */
function fromEngineError(error: EdgeqError): SqsError {
  switch (error.code) {
    case "invalid_request":
    case "payload_too_large":
    case "dedupe_conflict":
    case "id_in_other_queue":
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
  const limited = rateLimitedIfOverloaded(error);
  if (limited !== null) return fromEngineError(limited);
  console.error("sqs: unhandled error in", operation, error);
  return new SqsError("InternalError", "internal error");
}

/** The operation and its input, from a JSON-protocol request (X-Amz-Target and a JSON object body). */
function jsonRequest(target: string, body: Uint8Array): { action: string; input: Record<string, unknown> } {
  if (!target.startsWith(TARGET_PREFIX)) {
    throw new SqsError(
      "InvalidAction",
      "send X-Amz-Target: AmazonSQS.<Operation> with a JSON body, or a form-encoded Action=<Operation>",
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
  return { action: target.slice(TARGET_PREFIX.length), input: input as Record<string, unknown> };
}

/**
 * One SQS request, signed with SigV4 (verified against SQS_CREDENTIALS before the body is parsed; the
 * bearer token plays no part here): the AWS JSON 1.0 protocol (`X-Amz-Target: AmazonSQS.<Operation>`, a
 * JSON body, JSON answers) or, for a form-encoded body without X-Amz-Target, the query protocol
 * (`Action=<Operation>`, XML answers; src/sqs/query-protocol.ts). Both run the same operations.
 */
async function handleSqs(c: Context<SqsHonoEnv>, processors: ProcessorRegistry): Promise<Response> {
  const requestId = crypto.randomUUID();
  const target = c.req.header("x-amz-target") ?? "";
  const query = target === "" && (c.req.header("content-type") ?? "").startsWith("application/x-www-form-urlencoded");
  let action = target.slice(TARGET_PREFIX.length);
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
    const request = query ? queryRequest(new TextDecoder().decode(body)) : jsonRequest(target, body);
    action = request.action;
    // Query-protocol clients post to the queue URL itself and leave QueueUrl out of the body.
    if (request.input.QueueUrl === undefined && c.req.param("queue") !== undefined) request.input.QueueUrl = url.href;
    const operation = Object.hasOwn(SQS_OPERATIONS, action) ? SQS_OPERATIONS[action] : undefined;
    if (!operation) throw new SqsError("InvalidAction", `The action ${action} is not valid for this endpoint.`);
    const defer = (work: Promise<unknown>) => c.executionCtx.waitUntil(work);
    const clock = () => Date.now();
    const ctx: SqsContext = {
      op: { env, now, clock, processors, effects: new Effects(env, defer), defer, signal: c.req.raw.signal },
      db: openDb(env.DB),
      stores: allShards(env).map((s) => s.store),
      route: (queue) => queueRoute(env, queue, now),
      env,
      now,
      clock,
      origin: url.origin,
      region,
      accessKeyId,
      signal: c.req.raw.signal,
    };
    const output = await operation(request.input, ctx);
    if (query) return queryResponse(action, output, requestId);
    return new Response(JSON.stringify(output), {
      status: 200,
      headers: { "Content-Type": "application/x-amz-json-1.0", "x-amzn-RequestId": requestId },
    });
  } catch (error) {
    const sqsError = toSqsError(error, action);
    return query ? queryErrorResponse(sqsError, requestId) : sqsErrorResponse(sqsError, requestId);
  }
}

/**
 * The SQS-compatible endpoint: `POST /` and `POST /sqs` (point an SDK's `endpoint` at either), and
 * `POST /sqs/<account>/<queue>` (a queue URL, where SDKs using the queue URL as endpoint send).
 *
 * @example
 * app.route("/", sqsRoutes(processors));
 */
export function sqsRoutes(processors: ProcessorRegistry) {
  const handle = (c: Context<SqsHonoEnv>) => handleSqs(c, processors);
  return new Hono<SqsHonoEnv>().post("/", handle).post("/sqs", handle).post("/sqs/:account/:queue", handle);
}

/** The endpoint's Hono environment: the Worker's bindings (with the SQS credentials), no variables. */
type SqsHonoEnv = { Bindings: SqsEnv };
