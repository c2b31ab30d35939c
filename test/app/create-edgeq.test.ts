import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { dashboard } from "../../src/http/parts/dashboard";
import { reference } from "../../src/http/parts/reference";
import { sqs } from "../../src/http/parts/sqs";
import { echoProcessor } from "../../src/plugins/echo";
import type { Processor } from "../../src/processors/types";
import { createEdgeq } from "../../src/app/create-edgeq";

const valid = (type: string): Processor => ({
  type,
  payload: z.unknown(),
  engine: () => ({ name: "test", available: true }),
  run: async () => null,
});

describe("createEdgeq", () => {
  it("builds the handlers and the Durable Object classes a Worker exports, with its processors", async () => {
    const edgeq = createEdgeq({ processors: [echoProcessor, valid("render.v2")] });
    expect(edgeq.processors.types()).toEqual(["echo", "render.v2"]);
    expect(typeof edgeq.fetch).toBe("function");
    expect(typeof edgeq.scheduled).toBe("function");
    for (const cls of [edgeq.Coordinator, edgeq.EventHub, edgeq.Scheduler]) expect(typeof cls).toBe("function");
    // Processors typed with different envs go side by side (the list is typed AnyProcessor): one of edgeq's
    // and one whose env type shares nothing with edgeq's Env.
    const ownEnv: Processor<{ key: string }, { UPLOADS: R2Bucket }> = {
      type: "upload",
      payload: z.object({ key: z.string() }),
      run: async ({ key }, ctx) => (await ctx.env.UPLOADS.head(key))?.size ?? null,
    };
    expect(createEdgeq({ processors: [echoProcessor, ownEnv] }).processors.types()).toEqual(["echo", "upload"]);
    // No processors at all is a Worker of pull queues only.
    expect(createEdgeq().processors.types()).toEqual([]);
  });

  it("lists a processor without an engine function as built-in and available", async () => {
    const edgeq = createEdgeq({ processors: [{ type: "shout", payload: z.string(), run: async (s) => s }] });
    const ctx = createExecutionContext();
    const res = await edgeq.fetch(
      new Request("http://edgeq.test/v1/processors", { headers: { Authorization: `Bearer ${env.EDGEQ_TOKEN}` } }),
      env,
      ctx,
    );
    await waitOnExecutionContext(ctx);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ processors: [{ type: "shout", engine: "built-in", available: true }] });
  });

  it("serves the dashboard, the SQS endpoint and the API reference only when passed them; the API either way", async () => {
    const ask = async (edgeq: ReturnType<typeof createEdgeq>, method: string, path: string) => {
      const ctx = createExecutionContext();
      const headers = { Authorization: `Bearer ${env.EDGEQ_TOKEN}` };
      const res = await edgeq.fetch(new Request(`http://edgeq.test${path}`, { method, headers }), env, ctx);
      await waitOnExecutionContext(ctx);
      return res.status;
    };
    const core = createEdgeq();
    const whole = createEdgeq({ dashboard, sqs, reference });
    const parts: Array<[string, string]> = [
      ["GET", "/dashboard"],
      ["POST", "/"], // the SQS endpoint: an unsigned call is its own refusal (503 without credentials set)
      ["GET", "/openapi.json"],
      ["GET", "/docs"],
    ];
    for (const [method, path] of parts) {
      const served = await ask(whole, method, path);
      expect(served, `${method} ${path}`).not.toBe(404);
      expect(served, `${method} ${path}`).not.toBe(500);
      expect(await ask(core, method, path), `${method} ${path}`).toBe(404);
    }
    for (const edgeq of [core, whole]) expect(await ask(edgeq, "GET", "/v1/processors")).toBe(200);
  });

  it("refuses scheduled events in development, before any tick: wrangler dev serves them to anyone", () => {
    const edgeq = createEdgeq();
    const ctx = createExecutionContext();
    // A clock a day ahead, as anyone may send to wrangler dev's /cdn-cgi/local/scheduled?time=: refused.
    const controller = createScheduledController({ scheduledTime: Date.now() + 86_400_000, cron: "* * * * *" });
    expect(() => edgeq.scheduled(controller, { ...env, ENVIRONMENT: "development" }, ctx)).toThrow(
      /scheduled events are refused in development .*POST \/__tick/,
    );
  });

  const broken: Array<[string, unknown[], string]> = [
    ["a type no task can carry", [valid("echo"), valid("bad type!")], 'processors[1] ("bad type!"): type: 1-64'],
    ["no type", [{ ...valid("x"), type: undefined }], "processors[0]: type:"],
    ["no payload schema", [{ ...valid("sum"), payload: undefined }], 'processors[0] ("sum"): payload: a zod schema'],
    ["no run function", [{ ...valid("sum"), run: "go" }], 'processors[0] ("sum"): run: a function is required'],
    [
      "an engine that is not a function",
      [{ ...valid("sum"), engine: "gpu" }],
      'processors[0] ("sum"): engine: must be a function',
    ],
    [
      "two of one type",
      [valid("a"), valid("b"), valid("a")],
      `processors[2] ("a"): type "a" is already processors[0]'s`,
    ],
    ["something else than an object", [valid("a"), null], "processors[1]: not a processor object"],
  ];
  for (const [what, processors, message] of broken) {
    it(`refuses, naming it, a processor list with ${what}`, () => {
      expect(() => createEdgeq({ processors: processors as Processor[] })).toThrow(`edgeq: ${message}`);
    });
  }
});
