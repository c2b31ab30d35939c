import { describe, expect, it } from "vitest";
import { PermanentError, RetryAfterError } from "../../src/processors/errors";
import { httpProcessor } from "../../src/plugins/http/http";
import { verifyWebhook } from "../../src/processors/webhook-signature";
import { T0 } from "../helpers";
import { until } from "../support/until";
import type { TestContext } from "./context";
import { httpContext, receivedAt, receiverUrl } from "./http-context";

// Every test delivers to a real node:http receiver (test/support/webhook-receiver.ts) on 127.0.0.1.
// Each uses its own query string, so what the receiver recorded for that exact path is that test's alone.

type ContextOptions = Parameters<typeof httpContext>[0];

function deliver(payload: Record<string, unknown>, options: ContextOptions = {}): Promise<unknown> {
  return run(payload, httpContext(options));
}

function run(payload: Record<string, unknown>, { ctx }: TestContext): Promise<unknown> {
  return httpProcessor.run(httpProcessor.payload.parse(payload), ctx);
}

/** The error a delivery failed with (fails the test if it succeeded). */
async function failure(promise: Promise<unknown>): Promise<Error> {
  const outcome = await promise.then(
    (result) => ({ result }),
    (error: unknown) => ({ error }),
  );
  if (!("error" in outcome)) throw new Error(`expected a failure, got ${JSON.stringify(outcome.result)}`);
  expect(outcome.error).toBeInstanceOf(Error);
  return outcome.error as Error;
}

/** A retryable failure: a plain Error, neither permanent nor with a Retry-After. */
function expectRetryable(error: Error): void {
  expect(error).not.toBeInstanceOf(PermanentError);
  expect(error).not.toBeInstanceOf(RetryAfterError);
}

describe("http processor: what it sends", () => {
  it("signs the request so the receiver verifies it, with the injected clock's timestamp, task id and attempt", async () => {
    const path = "/ok?case=signature";
    await deliver({ url: receiverUrl(path), body: { order: 42 } }, { taskId: "task-sig", attempt: 3, now: () => T0 });
    const [request] = await receivedAt(path);
    expect(request!.signature_valid).toBe(true);
    expect(request!.signed_at).toBe(T0 / 1000);
    expect(request!.headers["edgeq-signature"]).toMatch(new RegExp(`^t=${T0 / 1000},v1=[0-9a-f]{64}$`));
    expect(request!.headers["edgeq-task-id"]).toBe("task-sig");
    expect(request!.headers["edgeq-attempt"]).toBe("3");
    // The exported verifier agrees with the receiver's independent node:crypto check.
    const secret = "test-webhook-secret";
    expect(await verifyWebhook(secret, request!.body, request!.headers["edgeq-signature"], T0 / 1000)).toBe(true);
    expect(await verifyWebhook(secret, `${request!.body} `, request!.headers["edgeq-signature"], T0 / 1000)).toBe(
      false,
    );
  });

  it("sends a JSON body as application/json with the method and custom headers given", async () => {
    const path = "/ok?case=json-put";
    await deliver({ url: receiverUrl(path), method: "PUT", headers: { "X-Custom": "yes" }, body: { a: [1, "b"] } });
    const [request] = await receivedAt(path);
    expect(request!.method).toBe("PUT");
    expect(request!.body).toBe('{"a":[1,"b"]}');
    expect(request!.headers["content-type"]).toBe("application/json");
    expect(request!.headers["x-custom"]).toBe("yes");
    expect(request!.headers["user-agent"]).toBe("edgeq-webhook/1");
    expect(request!.signature_valid).toBe(true);
  });

  it("sends a string body as is, and keeps a Content-Type the payload gives", async () => {
    const csv = "/ok?case=string-body";
    await deliver({ url: receiverUrl(csv), headers: { "content-type": "text/csv" }, body: "a,b\n1,2\n" });
    const [request] = await receivedAt(csv);
    expect(request!.body).toBe("a,b\n1,2\n");
    expect(request!.headers["content-type"]).toBe("text/csv");
    expect(request!.signature_valid).toBe(true);

    const vnd = "/ok?case=vendor-json";
    await deliver({ url: receiverUrl(vnd), headers: { "Content-Type": "application/vnd.api+json" }, body: [1] });
    const [vendor] = await receivedAt(vnd);
    expect(vendor!.headers["content-type"]).toBe("application/vnd.api+json");
    expect(vendor!.body).toBe("[1]");
  });

  it("sends a GET without a body, signed over the empty body", async () => {
    const path = "/ok?case=get";
    await deliver({ url: receiverUrl(path), method: "GET" });
    const [request] = await receivedAt(path);
    expect(request!.method).toBe("GET");
    expect(request!.body).toBe("");
    expect(request!.headers["content-type"]).toBeUndefined();
    expect(request!.signature_valid).toBe(true);
  });

  it("refuses to send anything without WEBHOOK_SECRET (a permanent failure)", async () => {
    const path = "/ok?case=no-secret";
    const error = await failure(deliver({ url: receiverUrl(path) }, { env: { WEBHOOK_SECRET: undefined } }));
    expect(error).toBeInstanceOf(PermanentError);
    expect(error.message).toBe("WEBHOOK_SECRET is not configured; refusing to send unsigned webhooks");
    expect(await receivedAt(path)).toEqual([]);
  });
});

describe("http processor: the receiver's answer", () => {
  it("completes a 2xx with status, content-type, body, truncated and duration", async () => {
    const result = await deliver({ url: receiverUrl("/ok?case=result") });
    expect(result).toEqual({
      status: 200,
      headers: { "content-type": "application/json" },
      body: '{"ok":true,"method":"POST"}',
      truncated: false,
      duration_ms: 0, // measured with the injected clock, which this context holds at T0
    });
  });

  it("measures duration_ms across the request with ctx.now()", async () => {
    const result = await deliver({ url: receiverUrl("/slow?ms=300&case=duration") }, { now: () => Date.now() });
    expect(result).toMatchObject({ status: 200, body: '{"ok":true}' });
    expect((result as { duration_ms: number }).duration_ms).toBeGreaterThanOrEqual(300);
  });

  it("completes a 204 with an empty body and no content-type", async () => {
    const result = await deliver({ url: receiverUrl("/no-content?case=204") });
    expect(result).toMatchObject({ status: 204, headers: {}, body: "", truncated: false });
  });

  it("keeps the first 4 KiB of the body and says whether it was truncated", async () => {
    const exact = await deliver({ url: receiverUrl("/big?n=4096&case=exact") });
    expect(exact).toMatchObject({ body: "x".repeat(4096), truncated: false });
    const big = await deliver({ url: receiverUrl("/big?n=1000000&case=big") });
    expect(big).toMatchObject({ body: "x".repeat(4096), truncated: true });
  });

  it("drops a multi-byte character cut at the 4 KiB limit instead of garbling it", async () => {
    // "€" is 3 bytes in UTF-8: 4096 bytes hold 1365 of them and one byte of the next.
    const result = await deliver({ url: receiverUrl(`/big?n=2000&unit=${encodeURIComponent("€")}&case=utf8`) });
    expect(result).toMatchObject({ body: "€".repeat(1365), truncated: true });
  });

  it("fails a 400 permanently, quoting the status and the receiver's error", async () => {
    const error = await failure(deliver({ url: receiverUrl("/bad?case=400") }));
    expect(error).toBeInstanceOf(PermanentError);
    expect(error.message).toContain("400");
    expect(error.message).toContain("order_id is required");
  });

  it("fails a redirect permanently without following it", async () => {
    const target = "/ok?case=redirect-target";
    const error = await failure(deliver({ url: receiverUrl(`/redirect?to=${encodeURIComponent(target)}`) }));
    expect(error).toBeInstanceOf(PermanentError);
    expect(error.message).toContain("302");
    expect(error.message).toContain(target);
    expect(await receivedAt(target)).toEqual([]);
  });

  it("retries a 503 no sooner than its Retry-After (delta seconds), capped at 1 hour", async () => {
    const error = await failure(deliver({ url: receiverUrl("/flaky?case=7") }));
    expect(error).toBeInstanceOf(RetryAfterError);
    expect((error as RetryAfterError).retryAfterS).toBe(7);
    expect(error.message).toContain("503");

    const capped = await failure(deliver({ url: receiverUrl("/flaky?retry_after=999999&case=cap") }));
    expect((capped as RetryAfterError).retryAfterS).toBe(3600);
  });

  it("reads an HTTP-date Retry-After against the injected clock", async () => {
    const at = encodeURIComponent(new Date(T0 + 120_000).toUTCString());
    const error = await failure(deliver({ url: receiverUrl(`/date-retry?at=${at}`) }, { now: () => T0 }));
    expect(error).toBeInstanceOf(RetryAfterError);
    expect((error as RetryAfterError).retryAfterS).toBe(120);

    // A date already past: the queue's normal backoff applies, not an immediate retry.
    const past = encodeURIComponent(new Date(T0 - 60_000).toUTCString());
    expectRetryable(await failure(deliver({ url: receiverUrl(`/date-retry?at=${past}`) }, { now: () => T0 })));
  });

  it("retries a 429 without Retry-After as an ordinary failure", async () => {
    const error = await failure(deliver({ url: receiverUrl("/teapot-429?case=429") }));
    expectRetryable(error);
    expect(error.message).toContain("429");
    expect(error.message).toContain("slow down");
  });
});

describe("http processor: no answer", () => {
  it("retries when the receiver does not answer within timeout_s", async () => {
    const started = Date.now();
    const error = await failure(deliver({ url: receiverUrl("/slow?ms=5000&case=timeout"), timeout_s: 1 }));
    expectRetryable(error);
    expect(error.message).toBe("webhook receiver did not answer within 1 s");
    expect(Date.now() - started).toBeLessThan(4000);
  });

  it("retries when the body stalls past timeout_s after the headers arrived", async () => {
    const error = await failure(deliver({ url: receiverUrl("/stall-body?case=stall"), timeout_s: 1 }));
    expectRetryable(error);
    expect(error.message).toBe("webhook receiver did not answer within 1 s");
  });

  it("retries when the receiver closes the connection without answering (a network error)", async () => {
    const path = "/hangup?case=network";
    const error = await failure(deliver({ url: receiverUrl(path), body: { a: 1 } }));
    expectRetryable(error);
    expect(error.message).toMatch(/^webhook delivery failed: /);
    // Sent once: fetch does not silently re-send a request whose connection dropped.
    expect(await receivedAt(path)).toHaveLength(1);
  });

  it("stops waiting as soon as the task's signal is aborted (cancelled or lease lost)", async () => {
    const context = httpContext();
    const path = "/slow?ms=10000&case=cancel";
    const started = Date.now();
    const pending = run({ url: receiverUrl(path) }, context);
    // Aborted once the receiver holds the request, so the delivery is waiting on its answer.
    await until("the receiver to hold the request", async () => (await receivedAt(path)).length === 1);
    context.abort.abort();
    const error = await failure(pending);
    expectRetryable(error);
    expect(error.message).toContain("cancelled");
    expect(Date.now() - started).toBeLessThan(5000);
  });
});
