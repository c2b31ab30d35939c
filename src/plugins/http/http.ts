import * as z from "zod";
import { PermanentError, RetryAfterError } from "../../processors/errors";
import { excerpt, MAX_RESPONSE_BODY_BYTES, parseRetryAfter, readBodyPrefix } from "./http-response";
import type { Processor, ProcessorContext } from "../../processors/types";
import { SIGNATURE_HEADER, signWebhook } from "../../processors/webhook-signature";

/** Longest URL accepted: 2,048 characters is what browsers, CDNs and most servers reliably handle. */
const MAX_URL_CHARS = 2048;

/** Most custom headers: 32 covers auth, tracing and content negotiation; more is almost surely a mistake,
 * and servers commonly reject requests whose headers exceed 8–16 KB in total. */
const MAX_HEADERS = 32;

/** Longest header value: 4,096 characters, so a few headers cannot exceed servers' usual 8 KB header limit. */
const MAX_HEADER_VALUE_CHARS = 4096;

/** Timeout bounds, in seconds: at least 1 s; at most 120 s, well within a push task's lease, and long past
 * the point where a webhook receiver should have answered (they are expected to queue work and reply fast). */
const MIN_TIMEOUT_S = 1;
const MAX_TIMEOUT_S = 120;
const DEFAULT_TIMEOUT_S = 30;

/** Headers the platform computes itself (framing, routing) or that carry the signature: a payload may not set them. */
const FORBIDDEN_HEADERS = new Set(["host", "content-length", "transfer-encoding", "connection"]);
const RESERVED_PREFIX = "edgeq-";

/** An RFC 9110 header name (a token). */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** A header value fetch accepts: no line breaks or NUL (which would otherwise fail every attempt). */
const HEADER_VALUE = /^[^\r\n\0]*$/;

const USER_AGENT = "edgeq-webhook/1";

const headerName = z
  .string()
  .regex(HEADER_NAME, "not a valid header name")
  .refine((name) => !FORBIDDEN_HEADERS.has(name.toLowerCase()), "is set by the platform and may not be given")
  .refine((name) => !name.toLowerCase().startsWith(RESERVED_PREFIX), "Edgeq-* headers are reserved for the signature");

const payloadSchema = z
  .strictObject({
    url: z.url({ protocol: /^https?$/, error: "must be an http(s) URL" }).max(MAX_URL_CHARS),
    method: z.enum(["GET", "POST", "PUT", "PATCH", "DELETE"]).default("POST"),
    headers: z
      .record(headerName, z.string().max(MAX_HEADER_VALUE_CHARS).regex(HEADER_VALUE, "may not contain line breaks"))
      .refine((h) => Object.keys(h).length <= MAX_HEADERS, `at most ${MAX_HEADERS} headers`)
      .optional(),
    /** A string is sent as is; any other JSON value is sent as JSON. */
    body: z.json().optional(),
    timeout_s: z.number().int().min(MIN_TIMEOUT_S).max(MAX_TIMEOUT_S).default(DEFAULT_TIMEOUT_S),
  })
  .refine((p) => !(p.method === "GET" && p.body !== undefined), {
    path: ["body"],
    message: "a GET request cannot carry a body",
  });

/** The `http` processor's payload, after defaults. */
export type HttpPayload = z.infer<typeof payloadSchema>;

/** What a delivered webhook's task completes with. */
export interface HttpResult {
  status: number;
  headers: { "content-type"?: string };
  /** The first 4 KiB of the response body, as text. */
  body: string;
  truncated: boolean;
  duration_ms: number;
}

function buildRequest(payload: HttpPayload): { headers: Headers; body: string | undefined } {
  const headers = new Headers(payload.headers);
  if (payload.body === undefined) return { headers, body: undefined };
  if (typeof payload.body === "string") return { headers, body: payload.body };
  if (!headers.has("content-type")) headers.set("Content-Type", "application/json");
  return { headers, body: JSON.stringify(payload.body) };
}

/** The error for a fetch that never produced a response (or whose body could not be read). */
function deliveryError(error: unknown, timeout: AbortSignal, cancel: AbortSignal, payload: HttpPayload): Error {
  const cause = { cause: error };
  if (cancel.aborted) return new Error("webhook delivery aborted: the task was cancelled or its lease lost", cause);
  if (timeout.aborted) return new Error(`webhook receiver did not answer within ${payload.timeout_s} s`, cause);
  const message = error instanceof Error ? error.message : String(error);
  return new Error(`webhook delivery failed: ${message}`, cause);
}

async function deliver(payload: HttpPayload, ctx: ProcessorContext, secret: string): Promise<HttpResult> {
  const { headers, body } = buildRequest(payload);
  headers.set(SIGNATURE_HEADER, await signWebhook(secret, body ?? "", Math.floor(ctx.now() / 1000)));
  headers.set("Edgeq-Task-Id", ctx.taskId);
  headers.set("Edgeq-Attempt", String(ctx.attempt));
  if (!headers.has("user-agent")) headers.set("User-Agent", USER_AGENT);

  const timeout = AbortSignal.timeout(payload.timeout_s * 1000);
  const signal = AbortSignal.any([timeout, ctx.signal]);
  const started = ctx.now();
  let response: Response;
  let text: string;
  let truncated: boolean;
  try {
    // Redirects are not followed: the signed request would be re-sent (or turned into a GET) elsewhere.
    response = await fetch(payload.url, { method: payload.method, headers, body, signal, redirect: "manual" });
    ({ text, truncated } = await readBodyPrefix(response, MAX_RESPONSE_BODY_BYTES));
  } catch (error) {
    throw deliveryError(error, timeout, ctx.signal, payload);
  }
  const { status } = response;
  const answered = `webhook receiver answered ${status}${response.statusText ? ` ${response.statusText}` : ""}`;
  const quoted = text.trim() ? `: ${excerpt(text)}` : "";

  if (status >= 200 && status < 300) {
    const contentType = response.headers.get("content-type");
    return {
      status,
      headers: contentType === null ? {} : { "content-type": contentType },
      body: text,
      truncated,
      duration_ms: ctx.now() - started,
    };
  }
  if (status >= 300 && status < 400) {
    const location = response.headers.get("location");
    throw new PermanentError(`${answered} (redirect${location ? ` to ${location}` : ""}; redirects are not followed)`);
  }
  if (status >= 500 || status === 408 || status === 429) {
    const retryAfterS = parseRetryAfter(response.headers.get("retry-after"), ctx.now());
    if (retryAfterS !== null)
      throw new RetryAfterError(retryAfterS, `${answered}, retry after ${retryAfterS} s${quoted}`);
    throw new Error(`${answered}${quoted}`);
  }
  throw new PermanentError(`${answered}${quoted}`);
}

/**
 * `http`: delivers a webhook. Sends the request with an `Edgeq-Signature` header (see
 * `webhook-signature.ts` for the scheme), `Edgeq-Task-Id` and `Edgeq-Attempt`, and completes with the
 * receiver's answer. A 2xx completes the task; a 3xx or a 4xx other than 408/429 fails it permanently;
 * a 5xx, 408, 429, a network error or a timeout is retried — no sooner than the receiver's Retry-After
 * when it gives one (at most 1 hour). Requires the `WEBHOOK_SECRET` secret: unsigned webhooks are refused.
 *
 * @example
 * // POST /v1/queues/hooks/tasks
 * { "type": "http", "payload": { "url": "https://example.com/hooks/order", "body": { "order": 42 } } }
 * // completes with { "status": 200, "headers": { "content-type": "application/json" },
 * //                  "body": "{\"ok\":true}", "truncated": false, "duration_ms": 84 }
 */
export const httpProcessor: Processor<HttpPayload> = {
  type: "http",
  payload: payloadSchema,
  engine: (env) => ({
    name: "fetch",
    available: !!env.WEBHOOK_SECRET,
    note: env.WEBHOOK_SECRET ? undefined : "set the WEBHOOK_SECRET secret",
  }),
  async run(payload, ctx) {
    const secret = ctx.env.WEBHOOK_SECRET;
    if (!secret) throw new PermanentError("WEBHOOK_SECRET is not configured; refusing to send unsigned webhooks");
    return deliver(payload, ctx, secret);
  },
};
