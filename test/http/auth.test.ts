import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { DEV_TOKEN } from "../../src/http/auth";
import { buildApp } from "../../src/http/app";
import { artifactKey } from "../../src/storage/artifacts";
import { db, snapshot, TEST_APP_DEPS, uniqueQueue } from "../helpers";
import { call, expectError, read, request, type CallOptions } from "./api";
import {
  callRoute,
  everyRoute,
  PUBLIC_OPERATIONS,
  SESSION_OPERATIONS,
  UPGRADE_OPERATIONS,
  UPLOADED_ARTIFACT,
} from "./fixtures";

/** Everything a request could change: the queue's tasks, its stored config and the artifacts in R2. */
async function state(queue: string, artifactTask: string): Promise<unknown[]> {
  const config = await db().all(sql`SELECT * FROM queues WHERE name = ${queue}`);
  const artifacts = (await env.ARTIFACTS.list({ prefix: `tasks/${artifactTask}/` })).objects.map((o) => o.key);
  return [await snapshot(queue), config, artifacts];
}

describe("bearer auth on /v1", () => {
  it("the route list (test/http/fixtures.ts) covers every operation in the OpenAPI document", async () => {
    const { routes } = await everyRoute();
    const doc = await call<{ paths: Record<string, Record<string, unknown>> }>("GET", "/openapi.json", { token: null });
    const documented = Object.entries(doc.body.paths).flatMap(([path, item]) =>
      Object.keys(item).map((method) => `${method} ${path}`),
    );
    expect([...routes.map((r) => r.operation), ...PUBLIC_OPERATIONS].sort()).toEqual(documented.sort());
    expect(documented).toHaveLength(51);
  });

  const rejected: Array<[string, CallOptions]> = [
    ["without a token", { token: null }],
    ["with a wrong token", { token: "wrong-token" }],
    ["with the right token under another scheme", { token: null, headers: { Authorization: "Basic test-token" } }],
    ["with an empty bearer", { token: "" }],
    ["with a prefix of the right token", { token: "test-toke" }],
  ];

  for (const [label, auth] of rejected) {
    it(`answers every route ${label} with 401 unauthorized and changes nothing`, async () => {
      const { queue, artifactTask, routes } = await everyRoute();
      const before = await state(queue, artifactTask);
      for (const route of routes) {
        const res = await callRoute(route, auth);
        expectError(res, 401, "unauthorized", /Bearer/);
        expect(res.headers.get("WWW-Authenticate"), route.operation).toBe('Bearer realm="edgeq"');
      }
      expect(await state(queue, artifactTask)).toEqual(before);
    });
  }

  it("serves every route with the right token (the requests above are real)", async () => {
    const { queue, artifactTask, routes } = await everyRoute();
    const before = await state(queue, artifactTask);
    for (const route of routes) {
      const res = await callRoute(route);
      if ([...UPGRADE_OPERATIONS, ...SESSION_OPERATIONS].includes(route.operation)) {
        expect(res.status, `${route.operation}: ${res.text}`).toBe(101);
        continue;
      }
      expect(res.status, `${route.operation}: ${res.text}`).toBeGreaterThanOrEqual(200);
      expect(res.status, `${route.operation}: ${res.text}`).toBeLessThan(300);
    }
    expect(await state(queue, artifactTask)).not.toEqual(before);
    expect(await env.ARTIFACTS.head(artifactKey(artifactTask, UPLOADED_ARTIFACT))).not.toBeNull();
  });

  it("accepts the scheme name in any case", async () => {
    const res = await call("GET", "/v1/queues", { token: null, headers: { Authorization: "bearer test-token" } });
    expect(res.status).toBe(200);
  });

  it("keeps /health, /openapi.json and /docs public", async () => {
    const health = await call("GET", "/health", { token: null });
    expect([health.status, health.body]).toEqual([200, { status: "ok" }]);
    const doc = await call<{ openapi: string }>("GET", "/openapi.json", { token: null });
    expect([doc.status, doc.body.openapi]).toEqual([200, "3.1.0"]);
    const docs = await call("GET", "/docs", { token: null });
    expect(docs.status).toBe(200);
    expect(docs.headers.get("Content-Type")).toMatch(/^text\/html/);
    expect(docs.text).toContain("/v1/queues/{queue}/lease");
  });
});

/** Calls a freshly built app with the test bindings overridden, as a different deployment would run. */
async function callWith(
  overrides: { ENVIRONMENT?: string; EDGEQ_TOKEN?: string | undefined },
  method: string,
  path: string,
  opts: CallOptions = {},
) {
  const ctx = createExecutionContext();
  const res = await buildApp(TEST_APP_DEPS).fetch(request(method, path, opts), { ...env, ...overrides }, ctx);
  await waitOnExecutionContext(ctx);
  return read<unknown>(res);
}

describe("deployment settings", () => {
  it("refuses to serve in production without EDGEQ_TOKEN: 503 not_configured, and /health says so", async () => {
    const queue = uniqueQueue("prod");
    const unset = { ENVIRONMENT: "production", EDGEQ_TOKEN: undefined };
    for (const token of [null, "test-token", DEV_TOKEN]) {
      const res = await callWith(unset, "POST", `/v1/queues/${queue}/tasks`, { token, body: { payload: 1 } });
      expectError(res, 503, "not_configured", /EDGEQ_TOKEN/);
    }
    expectError(await callWith(unset, "GET", "/v1/queues"), 503, "not_configured");
    expect(await snapshot(queue)).toEqual([]);
    const health = await callWith(unset, "GET", "/health");
    expect([health.status, health.body]).toEqual([503, { status: "not_configured" }]);
    // A blank or comma-only secret is no token either.
    for (const blank of ["", " , "]) {
      expectError(
        await callWith({ ENVIRONMENT: "production", EDGEQ_TOKEN: blank }, "GET", "/v1/queues"),
        503,
        "not_configured",
      );
    }
    // The docs stay readable so an operator can see what is wrong.
    expect((await callWith(unset, "GET", "/openapi.json", { token: null })).status).toBe(200);
  });

  it("serves production with a token, and accepts each of a comma-separated list (rotation)", async () => {
    const rotating = { ENVIRONMENT: "production", EDGEQ_TOKEN: "old-token, new-token" };
    const health = await callWith(rotating, "GET", "/health");
    expect([health.status, health.body]).toEqual([200, { status: "ok" }]);
    for (const token of ["old-token", "new-token"]) {
      expect((await callWith(rotating, "GET", "/v1/queues", { token })).status).toBe(200);
    }
    for (const token of ["old-token, new-token", "old-token,new-token", "test-token", "new", DEV_TOKEN]) {
      expectError(await callWith(rotating, "GET", "/v1/queues", { token }), 401, "unauthorized");
    }
  });

  it("accepts only the development token in development without EDGEQ_TOKEN", async () => {
    const dev = { ENVIRONMENT: "development", EDGEQ_TOKEN: undefined };
    expect((await callWith(dev, "GET", "/v1/queues", { token: DEV_TOKEN })).status).toBe(200);
    expectError(await callWith(dev, "GET", "/v1/queues", { token: "test-token" }), 401, "unauthorized");
    expectError(await callWith(dev, "GET", "/v1/queues", { token: null }), 401, "unauthorized");
  });
});
