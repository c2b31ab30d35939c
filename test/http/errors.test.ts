import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { buildApp, MAX_BODY_BYTES } from "../../src/http/app";
import { MAX_ENQUEUE_TASKS, MAX_PAYLOAD_BYTES } from "../../src/contracts/limits";
import { snapshot, TEST_APP_DEPS, uniqueQueue } from "../helpers";
import { call, enqueueOne, expectError, getTask, lease, leaseOne, read, request, type AckResults } from "./api";

/** The JSON of a payload that is `bytes` long once serialised. */
const blob = (bytes: number) => "x".repeat(bytes - 2);

describe("body parsing", () => {
  const bodied: Array<[string, (q: string, id: string) => string]> = [
    ["enqueue", (q) => `/v1/queues/${q}/tasks`],
    ["lease", (q) => `/v1/queues/${q}/lease`],
    ["ack", (q) => `/v1/queues/${q}/ack`],
    ["cancel queue", (q) => `/v1/queues/${q}/cancel`],
    ["redrive", (q) => `/v1/queues/${q}/redrive`],
    ["purge", (q) => `/v1/queues/${q}/purge`],
    ["complete", (_, id) => `/v1/tasks/${id}/complete`],
    ["fail", (_, id) => `/v1/tasks/${id}/fail`],
    ["heartbeat", (_, id) => `/v1/tasks/${id}/heartbeat`],
  ];

  for (const [name, path] of bodied) {
    it(`${name}: malformed JSON is 400 invalid_request; a body that is not JSON is 415; nothing changes`, async () => {
      const queue = uniqueQueue("body");
      await enqueueOne(queue);
      const { id } = await leaseOne(queue);
      await enqueueOne(queue);
      const before = await snapshot(queue);
      expectError(await call("POST", path(queue, id), { raw: '{"max": 1,' }), 400, "invalid_request", /JSON/);
      expectError(
        await call("POST", path(queue, id), { raw: "{}", contentType: null }),
        415,
        "unsupported_media_type",
        /Content-Type: application\/json/,
      );
      expectError(
        await call("POST", path(queue, id), { raw: "{}", contentType: "text/plain" }),
        415,
        "unsupported_media_type",
      );
      expectError(
        await call("POST", path(queue, id), { raw: "max=1", contentType: "application/x-www-form-urlencoded" }),
        415,
        "unsupported_media_type",
      );
      expect(await snapshot(queue)).toEqual(before);
    });
  }

  it("PUT config: malformed JSON is 400 and a non-JSON body 415", async () => {
    const queue = uniqueQueue("body");
    expectError(await call("PUT", `/v1/queues/${queue}/config`, { raw: "{" }), 400, "invalid_request");
    expectError(
      await call("PUT", `/v1/queues/${queue}/config`, { raw: "{}", contentType: "text/plain" }),
      415,
      "unsupported_media_type",
    );
    expect((await call("GET", `/v1/queues/${queue}/config`)).body).toMatchObject({ max_attempts: 3 });
  });

  it("accepts application/json with a charset naming UTF-8, in any case, quoted or not", async () => {
    const queue = uniqueQueue("body");
    for (const contentType of [
      "application/json; charset=utf-8",
      "application/json;charset=UTF-8",
      'application/json; charset="utf-8"',
      "application/json; charset=utf8",
      "Application/JSON",
    ]) {
      const res = await call("POST", `/v1/queues/${queue}/tasks`, { body: { payload: "é" }, contentType });
      expect(res.status, `${contentType}: ${res.text}`).toBe(201);
    }
    const listed = await call<{ tasks: Array<{ payload: unknown }> }>("GET", `/v1/queues/${queue}/tasks`);
    expect(listed.body.tasks.map((t) => t.payload)).toEqual(["é", "é", "é", "é", "é"]);
  });

  it("refuses JSON in another charset, and +json types, with 415 before reading the body; nothing changes", async () => {
    const queue = uniqueQueue("body");
    await enqueueOne(queue);
    const { id, lease_token } = await leaseOne(queue);
    const before = await snapshot(queue);
    // The body itself is plain ASCII JSON, valid in every one of these: only the declared type is wrong.
    const cases: Array<[string, string, string, RegExp]> = [
      ["POST", `/v1/queues/${queue}/tasks`, "application/json; charset=utf-16", /charset utf-16/],
      ["POST", `/v1/queues/${queue}/tasks`, "application/json; charset=UTF-16LE", /charset utf-16le/],
      ["POST", `/v1/queues/${queue}/tasks`, "application/json; charset=iso-8859-1", /charset iso-8859-1/],
      ["POST", `/v1/queues/${queue}/tasks`, "application/json-patch+json", /application\/json-patch\+json/],
      ["POST", `/v1/queues/${queue}/tasks`, "application/merge-patch+json", /merge-patch/],
      ["POST", `/v1/tasks/${id}/heartbeat`, "application/json; charset=utf-16", /charset utf-16/],
      ["PUT", `/v1/queues/${queue}/config`, "application/vnd.api+json", /vnd\.api\+json/],
    ];
    for (const [method, path, contentType, named] of cases) {
      const body = path.endsWith("heartbeat") ? { lease_token, progress: 5 } : {};
      const res = await call(method, path, { raw: JSON.stringify(body), contentType });
      expectError(res, 415, "unsupported_media_type", named);
      expect(res.text).toMatch(/Content-Type: application\/json/);
    }
    expect(await snapshot(queue)).toEqual(before);
  });
});

describe("size limits: 413 payload_too_large naming the limit", () => {
  it("rejects a payload over 256 KiB and creates nothing", async () => {
    const queue = uniqueQueue("size");
    const res = await call("POST", `/v1/queues/${queue}/tasks`, { body: { payload: blob(MAX_PAYLOAD_BYTES + 1) } });
    expectError(
      res,
      413,
      "payload_too_large",
      new RegExp(`${MAX_PAYLOAD_BYTES + 1} bytes.*limit is ${MAX_PAYLOAD_BYTES} bytes`),
    );
    expect(await snapshot(queue)).toEqual([]);
  });

  it("accepts a payload of exactly 256 KiB", async () => {
    const queue = uniqueQueue("size");
    const id = await enqueueOne(queue, { payload: blob(MAX_PAYLOAD_BYTES) });
    expect((await getTask(id)).payload).toHaveLength(MAX_PAYLOAD_BYTES - 2);
  });

  it("rejects a whole batch when one task's payload is too large, naming that task", async () => {
    const queue = uniqueQueue("size");
    const res = await call("POST", `/v1/queues/${queue}/tasks`, {
      body: { tasks: [{ payload: 1 }, { payload: blob(MAX_PAYLOAD_BYTES + 10) }] },
    });
    expectError(res, 413, "payload_too_large", new RegExp(`^tasks\\[1\\]\\.payload .*${MAX_PAYLOAD_BYTES} bytes`));
    expect(await snapshot(queue)).toEqual([]);
  });

  it("rejects a result over 256 KiB on complete and leaves the task processing", async () => {
    const queue = uniqueQueue("size");
    await enqueueOne(queue);
    const task = await leaseOne(queue);
    const before = await snapshot(queue);
    const res = await call("POST", `/v1/tasks/${task.id}/complete`, {
      body: { lease_token: task.lease_token, result: blob(MAX_PAYLOAD_BYTES + 1) },
    });
    expectError(res, 413, "payload_too_large", new RegExp(`limit is ${MAX_PAYLOAD_BYTES} bytes`));
    expect(await snapshot(queue)).toEqual(before);
    expect(
      (await call("POST", `/v1/tasks/${task.id}/complete`, { body: { lease_token: task.lease_token, result: 1 } }))
        .status,
    ).toBe(200);
  });

  it("rejects only the oversized item of a batch ack", async () => {
    const queue = uniqueQueue("size");
    await enqueueOne(queue);
    await enqueueOne(queue);
    const [a, b] = await lease(queue, { max: 2 });
    const res = await call<AckResults>("POST", `/v1/queues/${queue}/ack`, {
      body: {
        complete: [
          { id: a!.id, lease_token: a!.lease_token, result: blob(MAX_PAYLOAD_BYTES + 1) },
          { id: b!.id, lease_token: b!.lease_token, result: "small" },
        ],
      },
    });
    expect(res.status).toBe(200);
    expect(res.body.results).toEqual([
      {
        id: a!.id,
        ok: false,
        error: { code: "payload_too_large", message: expect.stringContaining(`${MAX_PAYLOAD_BYTES} bytes`) },
      },
      { id: b!.id, ok: true, state: "completed", children: [], repeated: false },
    ]);
    expect(await getTask(a!.id)).toMatchObject({ state: "processing", result: null });
    expect(await getTask(b!.id)).toMatchObject({ state: "completed", result: "small" });
  });

  it("rejects a batch over 10,000 tasks and creates none", async () => {
    const queue = uniqueQueue("size");
    const tasks = Array.from({ length: MAX_ENQUEUE_TASKS + 1 }, () => ({}));
    const res = await call("POST", `/v1/queues/${queue}/tasks`, { body: { tasks } });
    expectError(
      res,
      413,
      "payload_too_large",
      new RegExp(`at most ${MAX_ENQUEUE_TASKS} tasks.*got ${MAX_ENQUEUE_TASKS + 1}`),
    );
    expect(await snapshot(queue)).toEqual([]);
  });

  it("rejects a request body over the body limit before parsing it", async () => {
    const queue = uniqueQueue("size");
    const res = await call("POST", `/v1/queues/${queue}/tasks`, { raw: `{"payload":"${"x".repeat(MAX_BODY_BYTES)}"}` });
    expectError(res, 413, "payload_too_large", new RegExp(`limited to ${MAX_BODY_BYTES} bytes`));
    expect(await snapshot(queue)).toEqual([]);
  });
});

describe("unknown routes and unexpected failures", () => {
  it("answers an unknown route with 404 not_found JSON", async () => {
    expectError(await call("GET", "/v1/nope"), 404, "not_found", "no route for GET /v1/nope");
    expectError(await call("GET", "/nope", { token: null }), 404, "not_found", /GET \/nope/);
    expectError(await call("DELETE", `/v1/queues/${uniqueQueue()}/tasks/extra`), 404, "not_found", /^no route/);
  });

  it("answers a wrong method on a known route with 405 method_not_allowed (see method-not-allowed.test.ts)", async () => {
    expectError(await call("DELETE", `/v1/queues/${uniqueQueue()}/tasks`), 405, "method_not_allowed", /^DELETE/);
    expectError(await call("POST", "/v1/queues"), 405, "method_not_allowed");
  });

  it("answers a missing task with 404 not_found on every task route", async () => {
    const missing = "01ARZ3NDEKTSV4RRFFQ69G5FAV";
    expectError(await call("GET", `/v1/tasks/${missing}`), 404, "not_found", `task ${missing} not found`);
    for (const op of ["cancel", "retry"]) {
      expectError(await call("POST", `/v1/tasks/${missing}/${op}`), 404, "not_found", missing);
    }
    for (const [op, extra] of [
      ["complete", {}],
      ["fail", { error: "x" }],
      ["heartbeat", {}],
    ] as const) {
      const res = await call("POST", `/v1/tasks/${missing}/${op}`, { body: { lease_token: "t", ...extra } });
      expectError(res, 404, "not_found", missing);
    }
  });

  it("answers an unexpected error with 500 internal, logging the details but never returning them", async () => {
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      const ctx = createExecutionContext();
      const res = await read(
        await buildApp(TEST_APP_DEPS).fetch(request("GET", "/v1/queues"), { ...env, ENVIRONMENT: "staging" }, ctx),
      );
      await waitOnExecutionContext(ctx);
      expectError(res, 500, "internal", /^internal error$/);
      expect(res.text).not.toContain("staging");
      expect(logged).toHaveBeenCalledWith("unhandled error", "GET", "/v1/queues", expect.any(Error));
    } finally {
      logged.mockRestore();
    }
  });
});
