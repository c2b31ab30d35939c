import { env, exports } from "cloudflare:workers";
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { EdgeqClient, EdgeqError } from "../../src/client";
import { buildApp } from "../../src/http/app";
import { TEST_APP_DEPS } from "../helpers";
import { call, expectError, ORIGIN, read, request, TOKEN } from "./api";

/**
 * A request whose URL is the target exactly as the client sent it. `new Request()` resolves dot-segments
 * (WHATWG URL: `%2e%2e` is `..`), as do Miniflare under `wrangler dev` and Cloudflare's URL normalization
 * (on by default) before a deployed Worker runs; workerd itself hands the Worker the target unresolved.
 * This stands in for that last case: the app is called with a URL no `Request` would keep.
 */
function asSent(method: string, target: string, body?: unknown): Request {
  const sent = `${ORIGIN}${target}`;
  class AsSent extends Request {
    override get url(): string {
      return sent;
    }
  }
  return new AsSent(request(method, "/", body === undefined ? {} : { body }));
}

async function callAsSent(method: string, target: string, body?: unknown) {
  const ctx = createExecutionContext();
  const res = await buildApp(TEST_APP_DEPS).fetch(asSent(method, target, body), env, ctx);
  await waitOnExecutionContext(ctx);
  return read<unknown>(res);
}

describe("a dot-segment where a queue name goes", () => {
  it.each([
    ["GET", "/v1/queues/%2e%2e/health/config", ".."],
    ["GET", "/v1/queues/%2E%2E/stats", ".."],
    ["GET", "/v1/queues/.%2e/placement", ".."],
    ["GET", "/v1/queues/%2e/config", "."],
    ["POST", "/v1/queues/%2e%2e/tasks", ".."],
  ])("%s %s, unresolved, is 400 invalid_request naming the queue", async (method, target, name) => {
    const res = await callAsSent(method, target, method === "POST" ? { payload: 1 } : undefined);
    expectError(res, 400, "invalid_request", `queue: ${JSON.stringify(name)} is not a queue name (`);
  });

  it("PUT to the queue's health config, unresolved, changes no config (global or any queue's)", async () => {
    const before = await call("GET", "/v1/health/config");
    const res = await callAsSent("PUT", "/v1/queues/%2e%2e/health/config", { thresholds: { due_depth: { warn: 1 } } });
    expectError(res, 400, "invalid_request", 'queue: ".." is not a queue name');
    expect((await call("GET", "/v1/health/config")).body).toEqual(before.body);
  });

  it("is refused by edgeq's client before any request: URL rules would send it to another route", async () => {
    // What the platform does with it: the URL itself names another route before edgeq sees it.
    expect(new URL(`${ORIGIN}/v1/queues/%2e%2e/health/config`).pathname).toBe("/v1/health/config");
    let requests = 0;
    const client = new EdgeqClient({
      url: ORIGIN,
      token: TOKEN,
      fetch: (input, init) => {
        requests++;
        return exports.default.fetch(new Request(input, init));
      },
    });
    for (const name of ["..", ".", "%2e%2e"]) {
      const refused = await client.stats(name).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(EdgeqError);
      expect(refused).toMatchObject({ code: "invalid_request", status: 0 });
      expect((refused as EdgeqError).message).toMatch(`queue: ${JSON.stringify(name)} is not a queue name`);
    }
    expect(requests).toBe(0);
    // A valid name goes through as before.
    expect(await client.stats("dot-segments-valid")).toMatchObject({ counts: { pending: 0 } });
    expect(requests).toBe(1);
  });
});
