import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { DEFAULT_QUEUE_CONFIG as ENGINE_DEFAULTS } from "../../src/engine/queue-config";
import { buildApp } from "../../src/http/app";
import { processorEngine } from "../../src/processors/registry";
import { REFERENCE_REGISTRY, TEST_APP_DEPS } from "../helpers";
import { uniqueQueue } from "../helpers";
import { call, expectError, read, request, type ErrorBody } from "./api";

/** The config as the API shows it: the stored config and the partition count (one by default). */
const DEFAULT_QUEUE_CONFIG = { ...ENGINE_DEFAULTS, partitions: 1 };

interface ProcessorInfo {
  type: string;
  engine: string;
  available: boolean;
  note?: string;
}

const config = (queue: string) => `/v1/queues/${queue}/config`;

describe("GET /v1/processors", () => {
  it("lists every registered processor, in registry order, with the engine these bindings give it", async () => {
    // The test Worker runs [env.local]: no Workers AI binding and no webhook secret.
    expect(env.AI).toBeUndefined();
    expect(env.WEBHOOK_SECRET).toBeUndefined();
    const res = await call<{ processors: ProcessorInfo[] }>("GET", "/v1/processors");
    expect(res.status).toBe(200);
    const registered = REFERENCE_REGISTRY.list();
    expect(registered.length).toBeGreaterThan(0);
    expect(res.body.processors.map((p) => p.type)).toEqual(registered.map((p) => p.type));
    for (const processor of registered) {
      const engine = processorEngine(processor, env);
      const expected: ProcessorInfo = { type: processor.type, engine: engine.name, available: engine.available };
      if (engine.note !== undefined) expected.note = engine.note;
      expect(res.body.processors.find((p) => p.type === processor.type)).toEqual(expected);
    }
  });

  it("reports what each built-in can do without AI or a webhook secret", async () => {
    const res = await call<{ processors: ProcessorInfo[] }>("GET", "/v1/processors");
    const byType = new Map(res.body.processors.map((p) => [p.type, p]));
    const known = (type: string) => REFERENCE_REGISTRY.get(type) !== undefined;
    expect(known("tag") || known("tts") || known("http") || known("echo")).toBe(true);
    if (known("tts")) expect(byType.get("tts")).toMatchObject({ available: false, note: expect.stringMatching(/AI/) });
    if (known("tag"))
      expect(byType.get("tag")).toMatchObject({ available: true, engine: expect.stringMatching(/^local/) });
    if (known("http")) {
      expect(byType.get("http")).toMatchObject({ available: false, note: expect.stringMatching(/WEBHOOK_SECRET/) });
    }
    if (known("echo")) expect(byType.get("echo")).toMatchObject({ available: true });
  });
});

describe("queue processing config", () => {
  const push = { mode: "push", processor: "echo", concurrency: 8, rate_limit: { count: 5, per: "minute" } };

  it("round-trips mode, processor, concurrency and rate_limit, keeping them across other updates", async () => {
    const queue = uniqueQueue("pcfg");
    const put = await call("PUT", config(queue), { body: push });
    const expected = { ...DEFAULT_QUEUE_CONFIG, ...push };
    expect([put.status, put.body]).toEqual([200, expected]);
    expect((await call("GET", config(queue))).body).toEqual(expected);

    // A partial update touches only its own fields.
    const other = await call("PUT", config(queue), { body: { max_attempts: 4 } });
    expect(other.body).toEqual({ ...expected, max_attempts: 4 });
    expect((await call("GET", config(queue))).body).toEqual({ ...expected, max_attempts: 4 });

    const perSecond = await call("PUT", config(queue), { body: { rate_limit: { count: 100, per: "second" } } });
    expect(perSecond.body).toMatchObject({ rate_limit: { count: 100, per: "second" } });
    expect((await call("GET", config(queue))).body).toMatchObject({ rate_limit: { count: 100, per: "second" } });
  });

  it("clears rate_limit and processor with null, and goes back to pull", async () => {
    const queue = uniqueQueue("pcfg");
    expect((await call("PUT", config(queue), { body: push })).status).toBe(200);
    const cleared = await call("PUT", config(queue), { body: { rate_limit: null } });
    expect(cleared.body).toEqual({ ...DEFAULT_QUEUE_CONFIG, ...push, rate_limit: null });
    expect((await call("GET", config(queue))).body).toEqual({ ...DEFAULT_QUEUE_CONFIG, ...push, rate_limit: null });

    await call("PUT", config(queue), { body: { processor: null, mode: "pull" } });
    expect((await call("GET", config(queue))).body).toEqual({ ...DEFAULT_QUEUE_CONFIG, concurrency: 8 });
  });

  it("accepts concurrency at its bounds, 1 and 50", async () => {
    const queue = uniqueQueue("pcfg");
    for (const concurrency of [1, 50]) {
      const res = await call("PUT", config(queue), { body: { concurrency } });
      expect([res.status, (res.body as { concurrency: number }).concurrency]).toEqual([200, concurrency]);
    }
  });

  it("rejects an unknown processor with 400 naming processor and the registered ones, storing nothing", async () => {
    const queue = uniqueQueue("pcfg");
    const res = await call<ErrorBody>("PUT", config(queue), { body: { mode: "push", processor: "no-such-processor" } });
    expectError(res, 400, "invalid_request", /^processor: .*no-such-processor/);
    for (const p of REFERENCE_REGISTRY.list()) expect(res.body.error.message).toContain(p.type);
    expect((await call("GET", config(queue))).body).toEqual(DEFAULT_QUEUE_CONFIG);
    const queues = await call<{ queues: Array<{ queue: string }> }>("GET", "/v1/queues");
    expect(queues.body.queues.map((q) => q.queue)).not.toContain(queue);
  });

  const invalid: Array<[string, Record<string, unknown>, RegExp]> = [
    ["concurrency 0", { concurrency: 0 }, /^concurrency: /],
    ["concurrency 51", { concurrency: 51 }, /^concurrency: /],
    ["a fractional concurrency", { concurrency: 2.5 }, /^concurrency: /],
    ["an unknown mode", { mode: "both" }, /^mode: /],
    ["a rate limit of 0", { rate_limit: { count: 0, per: "second" } }, /^rate_limit\.count: /],
    ["a rate limit per hour", { rate_limit: { count: 5, per: "hour" } }, /^rate_limit\.per: /],
    ["a rate limit without per", { rate_limit: { count: 5 } }, /^rate_limit\.per: /],
    ["a rate limit with an unknown field", { rate_limit: { count: 5, per: "second", burst: 2 } }, /^rate_limit: /],
    ["a processor name with spaces", { processor: "my processor" }, /^processor: /],
  ];
  for (const [label, body, message] of invalid) {
    it(`rejects ${label} with 400 naming the field, keeping the stored config`, async () => {
      const queue = uniqueQueue("pcfg");
      expect((await call("PUT", config(queue), { body: push })).status).toBe(200);
      expectError(await call("PUT", config(queue), { body }), 400, "invalid_request", message);
      expect((await call("GET", config(queue))).body).toEqual({ ...DEFAULT_QUEUE_CONFIG, ...push });
    });
  }
});

describe("a push processor this Worker cannot run", () => {
  // [env.local] has no Workers AI binding and no WEBHOOK_SECRET: GET /v1/processors reports tts and http
  // unavailable, and push mode refuses them for the same reason, naming what is missing.
  const unavailable: Array<[string, RegExp]> = [
    ["tts", /^processor: "tts" cannot run on this Worker.*: no AI binding/],
    ["http", /^processor: "http" cannot run on this Worker.*WEBHOOK_SECRET/],
  ];
  for (const [processor, message] of unavailable) {
    it(`refuses push mode with processor "${processor}" with 400 saying why, storing nothing`, async () => {
      expect([env.AI, env.WEBHOOK_SECRET]).toEqual([undefined, undefined]);
      const listed = await call<{ processors: ProcessorInfo[] }>("GET", "/v1/processors");
      expect(listed.body.processors.find((p) => p.type === processor)).toMatchObject({ available: false });

      const queue = uniqueQueue("pcfg");
      expectError(
        await call("PUT", config(queue), { body: { mode: "push", processor } }),
        400,
        "invalid_request",
        message,
      );
      expect((await call("GET", config(queue))).body).toEqual(DEFAULT_QUEUE_CONFIG);

      // A pull queue may name it (nothing runs it there); switching that queue to push is refused.
      expect((await call("PUT", config(queue), { body: { processor } })).status).toBe(200);
      expectError(await call("PUT", config(queue), { body: { mode: "push" } }), 400, "invalid_request", message);
      expect((await call("GET", config(queue))).body).toEqual({ ...DEFAULT_QUEUE_CONFIG, processor });
    });
  }

  it("accepts it where the binding is there: the check is the one GET /v1/processors reports", async () => {
    const withSecret = { ...env, WEBHOOK_SECRET: "a-secret" };
    const viaApp = async <T>(method: string, path: string, body?: unknown) => {
      const ctx = createExecutionContext();
      const res = await read<T>(await buildApp(TEST_APP_DEPS).fetch(request(method, path, { body }), withSecret, ctx));
      await waitOnExecutionContext(ctx);
      return res;
    };
    const listed = await viaApp<{ processors: ProcessorInfo[] }>("GET", "/v1/processors");
    expect(listed.body.processors.find((p) => p.type === "http")).toMatchObject({ available: true });
    const queue = uniqueQueue("pcfg");
    const put = await viaApp("PUT", config(queue), { mode: "push", processor: "http" });
    expect(put.status, put.text).toBe(200);
    expect(put.body).toMatchObject({ mode: "push", processor: "http" });
    await call("PUT", config(queue), { body: { mode: "pull", processor: null } });
  });
});
