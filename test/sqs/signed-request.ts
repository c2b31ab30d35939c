import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { SQS_DEV_ACCESS_KEY_ID, SQS_DEV_SECRET_ACCESS_KEY } from "../../src/contracts/limits";
import { buildApp } from "../../src/http/app";
import { TEST_APP_DEPS } from "../helpers";
import { signRequest } from "../../src/sqs/sigv4";

/** SQS requests for the workerd tests, signed with SigV4 (the algorithm test/sqs/sigv4.test.ts checks against
 * AWS's own vectors; test/cli/sqs-*.test.ts drive the endpoint with the real AWS SDK). */

export const ORIGIN = "http://edgeq.test";

/** The pair these requests are signed with, configured as SQS_CREDENTIALS: the test environment has a token of
 * its own (EDGEQ_TOKEN "test-token"), and a server with one does not take the published pair by default
 * (src/sqs/credentials.ts). Overrides may set SQS_CREDENTIALS: undefined to see that default. */
const TEST_SQS_CREDENTIALS = `${SQS_DEV_ACCESS_KEY_ID}:${SQS_DEV_SECRET_ACCESS_KEY}`;

/** 20150830T123600Z from a time. */
function amzDate(ms: number): string {
  return new Date(ms)
    .toISOString()
    .replace(/[-:]/g, "")
    .replace(/\.\d{3}/, "");
}

/** An SQS JSON-protocol request signed with SigV4 (the algorithm test/sqs/sigv4.test.ts checks against AWS). */
export async function sqsRequest(
  operation: string,
  input: unknown,
  key = { id: SQS_DEV_ACCESS_KEY_ID, secret: SQS_DEV_SECRET_ACCESS_KEY },
): Promise<Request> {
  const date = amzDate(Date.now());
  const body = new TextEncoder().encode(JSON.stringify(input));
  const headers = new Headers({
    Host: "edgeq.test",
    "X-Amz-Date": date,
    "X-Amz-Target": `AmazonSQS.${operation}`,
    "Content-Type": "application/x-amz-json-1.0",
  });
  const scope = {
    scopeDate: date.slice(0, 8),
    region: "eu-west-1",
    service: "sqs",
    signedHeaders: ["content-type", "host", "x-amz-date", "x-amz-target"],
  };
  const signature = await signRequest({ method: "POST", path: "/", query: "", headers, body }, scope, date, key.secret);
  headers.set(
    "Authorization",
    `AWS4-HMAC-SHA256 Credential=${key.id}/${scope.scopeDate}/eu-west-1/sqs/aws4_request, SignedHeaders=${scope.signedHeaders.join(";")}, Signature=${signature}`,
  );
  return new Request(`${ORIGIN}/`, { method: "POST", headers, body });
}

/** Sends a request through the app, with the test environment (plus overrides), and reads its JSON. */
export async function call(request: Request, overrides: Record<string, unknown> = {}) {
  const ctx = createExecutionContext();
  const res = await buildApp(TEST_APP_DEPS).fetch(
    request,
    { ...env, SQS_CREDENTIALS: TEST_SQS_CREDENTIALS, ...overrides },
    ctx,
  );
  await waitOnExecutionContext(ctx);
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
}

/** A query-protocol request (form-encoded `Action=…`, XML answers), signed with SigV4, to `path`. */
export async function sqsQueryRequest(params: Record<string, string>, path = "/"): Promise<Request> {
  const date = amzDate(Date.now());
  const body = new TextEncoder().encode(new URLSearchParams({ Version: "2012-11-05", ...params }).toString());
  const headers = new Headers({
    Host: "edgeq.test",
    "X-Amz-Date": date,
    "Content-Type": "application/x-www-form-urlencoded",
  });
  const scope = {
    scopeDate: date.slice(0, 8),
    region: "us-east-1",
    service: "sqs",
    signedHeaders: ["content-type", "host", "x-amz-date"],
  };
  const signature = await signRequest(
    { method: "POST", path, query: "", headers, body },
    scope,
    date,
    SQS_DEV_SECRET_ACCESS_KEY,
  );
  headers.set(
    "Authorization",
    `AWS4-HMAC-SHA256 Credential=${SQS_DEV_ACCESS_KEY_ID}/${scope.scopeDate}/us-east-1/sqs/aws4_request, SignedHeaders=${scope.signedHeaders.join(";")}, Signature=${signature}`,
  );
  return new Request(`${ORIGIN}${path}`, { method: "POST", headers, body });
}

/** Sends a request through the app and reads its text (XML answers). */
export async function callText(request: Request): Promise<{ status: number; text: string }> {
  const ctx = createExecutionContext();
  const res = await buildApp(TEST_APP_DEPS).fetch(request, { ...env, SQS_CREDENTIALS: TEST_SQS_CREDENTIALS }, ctx);
  await waitOnExecutionContext(ctx);
  return { status: res.status, text: await res.text() };
}
