import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { httpProcessor } from "../../src/plugins/http/http";
import { MAX_RETRY_AFTER_S, parseRetryAfter } from "../../src/plugins/http/http-response";
import { REFERENCE_REGISTRY } from "../helpers";

const URL_OK = "https://example.com/hook";

function issues(payload: unknown): string[] {
  const parsed = httpProcessor.payload.safeParse(payload);
  return parsed.success ? [] : parsed.error.issues.map((i) => i.path.join("."));
}

describe("http payload schema", () => {
  it("applies the defaults: POST, 30 s", () => {
    expect(httpProcessor.payload.parse({ url: URL_OK })).toEqual({ url: URL_OK, method: "POST", timeout_s: 30 });
  });

  it("accepts every documented field", () => {
    const payload = {
      url: "http://127.0.0.1:8080/x?y=1",
      method: "PATCH",
      headers: { Authorization: "Bearer abc", "X-Trace": "1" },
      body: { nested: [1, "two", null, true] },
      timeout_s: 120,
    };
    expect(httpProcessor.payload.parse(payload)).toEqual(payload);
    expect(issues({ url: URL_OK, body: "raw text", timeout_s: 1 })).toEqual([]);
  });

  it.each([
    ["a missing url", {}, "url"],
    ["a non-http URL", { url: "ftp://example.com/x" }, "url"],
    ["a relative URL", { url: "/hook" }, "url"],
    ["an unsupported method", { url: URL_OK, method: "HEAD" }, "method"],
    ["a Host header", { url: URL_OK, headers: { Host: "evil.example" } }, "headers.Host"],
    ["a Content-Length header", { url: URL_OK, headers: { "content-length": "3" } }, "headers.content-length"],
    [
      "a forged signature header",
      { url: URL_OK, headers: { "Edgeq-Signature": "t=1,v1=0" } },
      "headers.Edgeq-Signature",
    ],
    ["an invalid header name", { url: URL_OK, headers: { "Bad Name": "x" } }, "headers.Bad Name"],
    ["a header value with a line break", { url: URL_OK, headers: { "X-A": "a\r\nX-B: b" } }, "headers.X-A"],
    ["a non-string header value", { url: URL_OK, headers: { "X-A": 1 } }, "headers.X-A"],
    ["a GET with a body", { url: URL_OK, method: "GET", body: "x" }, "body"],
    ["a timeout below 1 s", { url: URL_OK, timeout_s: 0 }, "timeout_s"],
    ["a timeout above 120 s", { url: URL_OK, timeout_s: 121 }, "timeout_s"],
    ["a fractional timeout", { url: URL_OK, timeout_s: 1.5 }, "timeout_s"],
    ["an unknown field", { url: URL_OK, timeout: 5 }, ""],
  ])("rejects %s", (_name, payload, path) => {
    expect(issues(payload)).toContain(path);
  });

  it("bounds the number of headers at 32", () => {
    const headers = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`X-H${i}`, "v"]));
    expect(issues({ url: URL_OK, headers: headers(32) })).toEqual([]);
    expect(issues({ url: URL_OK, headers: headers(33) })).toEqual(["headers"]);
  });
});

describe("parseRetryAfter", () => {
  const now = Date.parse("2026-01-01T00:00:00Z");

  it("reads delta-seconds and HTTP dates, rounding a date up to whole seconds", () => {
    expect(parseRetryAfter("7", now)).toBe(7);
    expect(parseRetryAfter(" 120 ", now)).toBe(120);
    expect(parseRetryAfter("Thu, 01 Jan 2026 00:01:30 GMT", now)).toBe(90);
    expect(parseRetryAfter("Thu, 01 Jan 2026 00:01:30 GMT", now + 500)).toBe(90);
  });

  it("caps the delay at MAX_RETRY_AFTER_S (1 hour)", () => {
    expect(MAX_RETRY_AFTER_S).toBe(3600);
    expect(parseRetryAfter("999999", now)).toBe(3600);
    expect(parseRetryAfter("Fri, 01 Jan 2027 00:00:00 GMT", now)).toBe(3600);
  });

  it("returns null for absent, malformed, zero and past values", () => {
    for (const value of [null, "", "soon", "1.5", "-5", "0", "Wed, 31 Dec 2025 23:59:00 GMT"]) {
      expect(parseRetryAfter(value, now), String(value)).toBeNull();
    }
  });
});

describe("http processor registration", () => {
  it("is a built-in processor for type http", () => {
    expect(REFERENCE_REGISTRY.get("http")).toBe(httpProcessor);
  });

  it("reports its engine as available only with WEBHOOK_SECRET", () => {
    expect(httpProcessor.engine!({ ...env, WEBHOOK_SECRET: "s" })).toEqual({
      name: "fetch",
      available: true,
      note: undefined,
    });
    expect(httpProcessor.engine!({ ...env, WEBHOOK_SECRET: undefined })).toEqual({
      name: "fetch",
      available: false,
      note: "set the WEBHOOK_SECRET secret",
    });
  });
});
