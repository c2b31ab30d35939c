import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { DEV_TOKEN } from "../../src/contracts/limits";
import { buildApp } from "../../src/http/app";
import { TEST_APP_DEPS } from "../helpers";
import { call, expectError, read, request, type CallOptions } from "./api";

/** One request through the app with the test environment plus `overrides`. */
async function callWith(overrides: Record<string, unknown>, method: string, path: string, opts: CallOptions = {}) {
  const ctx = createExecutionContext();
  const res = await buildApp(TEST_APP_DEPS).fetch(request(method, path, opts), { ...env, ...overrides }, ctx);
  await waitOnExecutionContext(ctx);
  return read<unknown>(res);
}

/**
 * POST /__tick, `npm start`'s cron tick behind the token (src/http/routes/local-tick.ts). What it answers when
 * it runs is test/cli/local-doors.test.ts's (a tick at the real time would reap other files' leases in the
 * D1 these tests share); here, everything that refuses.
 */
describe("POST /__tick", () => {
  it("is no route outside development: 404, as any unknown path, whatever the method or token", async () => {
    expectError(await call("POST", "/__tick"), 404, "not_found");
    expectError(await call("GET", "/__tick", { token: null }), 404, "not_found");
    const production = { ENVIRONMENT: "production", EDGEQ_TOKEN: "prod-token" };
    expectError(await callWith(production, "POST", "/__tick", { token: "prod-token" }), 404, "not_found");
  });

  it("in development, refuses a request without the token (401) and any method but POST (405)", async () => {
    const dev = { ENVIRONMENT: "development", EDGEQ_TOKEN: undefined };
    for (const token of [null, "test-token"]) {
      expectError(await callWith(dev, "POST", "/__tick", { token }), 401, "unauthorized");
    }
    const get = await callWith(dev, "GET", "/__tick", { token: DEV_TOKEN });
    expectError(get, 405, "method_not_allowed");
    expect(get.headers.get("Allow")).toBe("POST");
  });
});
