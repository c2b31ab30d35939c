import { describe, expect, it } from "vitest";
import { MAX_ENQUEUE_TASKS } from "../../src/contracts/limits";
import { call, complete, enqueueOne, leaseOne, MISSING_ID } from "./api";
import { openStream } from "../events/socket";
import { uniqueQueue } from "../helpers";
import { callRoute, everyRoute, PUBLIC_OPERATIONS, SESSION_OPERATIONS, UPGRADE_OPERATIONS } from "./fixtures";

/** The JSON Schema subset the generated document uses. */
interface Schema {
  $ref?: string;
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  additionalProperties?: boolean | Schema;
  items?: Schema;
  minItems?: number;
  maxItems?: number;
  enum?: unknown[];
  anyOf?: Schema[];
}
interface Operation {
  tags?: string[];
  summary?: string;
  security?: unknown;
  parameters?: Array<{ name: string; in: string; required?: boolean }>;
  requestBody?: { required?: boolean; content: Record<string, { schema: Schema }> };
  responses: Record<string, { description: string; content?: Record<string, { schema: Schema }> }>;
}
interface Document {
  openapi: string;
  info: { title: string; version: string; description: string };
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema>; securitySchemes: Record<string, unknown> };
}

/** Every operation the route files define, with its success status. */
const OPERATIONS: Record<string, number> = {
  "get /health": 200,
  "post /v1/queues/{queue}/tasks": 201,
  "get /v1/queues/{queue}/tasks": 200,
  "post /v1/queues/{queue}/lease": 200,
  "post /v1/queues/{queue}/lease/withdraw": 200,
  "post /v1/queues/{queue}/ack": 200,
  "post /v1/queues/{queue}/extend": 200,
  "post /v1/queues/{queue}/cancel": 200,
  "post /v1/queues/{queue}/pause": 200,
  "post /v1/queues/{queue}/redrive": 200,
  "post /v1/queues/{queue}/purge": 200,
  "post /v1/queues/{queue}/bulk": 200,
  "get /v1/queues": 200,
  "get /v1/queues/{queue}/stats": 200,
  "get /v1/queues/{queue}/config": 200,
  "put /v1/queues/{queue}/config": 200,
  "get /v1/tasks/{id}": 200,
  "post /v1/tasks/{id}/complete": 200,
  "post /v1/tasks/{id}/fail": 200,
  "post /v1/tasks/{id}/heartbeat": 200,
  "post /v1/tasks/{id}/cancel": 200,
  "post /v1/tasks/{id}/retry": 200,
  "post /v1/tasks/{id}/release": 200,
  "get /v1/tasks/{id}/wait": 200,
  "get /v1/tasks/{id}/artifacts": 200,
  "get /v1/tasks/{id}/dependencies": 200,
  "get /v1/tasks/{id}/dependents": 200,
  "get /v1/tasks/{id}/artifacts/{name}": 200,
  "put /v1/tasks/{id}/artifacts/{name}": 201,
  "get /v1/processors": 200,
  "post /v1/events/tickets": 200,
  "get /v1/queues/{queue}/throughput": 200,
  "get /v1/queues/{queue}/events": 101,
  "get /v1/tasks/{id}/events": 101,
  "get /v1/queues/{queue}/session": 101,
  "get /metrics": 200,
  "get /v1/queues/{queue}/health": 200,
  "get /v1/health/queues": 200,
  "get /v1/queues/{queue}/health/config": 200,
  "put /v1/queues/{queue}/health/config": 200,
  "get /v1/health/config": 200,
  "put /v1/health/config": 200,
  "put /v1/schedules/{name}": 200,
  "get /v1/schedules/{name}": 200,
  "get /v1/schedules": 200,
  "delete /v1/schedules/{name}": 200,
  "post /v1/schedules/{name}/pause": 200,
  "post /v1/schedules/{name}/resume": 200,
  "post /v1/schedules/{name}/trigger": 200,
  "get /v1/queues/{queue}/placement": 200,
  "post /v1/queues/{queue}/move": 202,
};

/** Operations without auth (test/http/fixtures.ts lists them apart from the bearer-protected routes). */
const PUBLIC = new Set(PUBLIC_OPERATIONS);
/** The events WebSockets: a bearer token or a ticket; a 101 without a body (the messages are a component). */
const UPGRADE = new Set(UPGRADE_OPERATIONS);
/** The worker session's WebSocket: the bearer token; its first message a component (SessionMessage). */
const SESSION = new Set(SESSION_OPERATIONS);

/** Operations whose success response or request body is raw bytes rather than JSON. */
const BINARY_RESPONSE = new Set(["get /v1/tasks/{id}/artifacts/{name}"]);
const BINARY_BODY = new Set(["put /v1/tasks/{id}/artifacts/{name}"]);
const BINARY_CONTENT = "application/octet-stream";
/** Operations whose success response is text (the Prometheus exposition format). */
const TEXT_RESPONSE = new Set(["get /metrics"]);
const TEXT_CONTENT = "text/plain";

async function openapi(): Promise<Document> {
  const res = await call<Document>("GET", "/openapi.json", { token: null });
  expect(res.status).toBe(200);
  expect(res.headers.get("Content-Type")).toMatch(/^application\/json/);
  return res.body;
}

function operations(doc: Document): Array<[string, Operation]> {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item).map(([method, op]): [string, Operation] => [`${method} ${path}`, op]),
  );
}

function resolve(doc: Document, schema: Schema): Schema {
  if (!schema.$ref) return schema;
  const name = schema.$ref.replace("#/components/schemas/", "");
  const target = doc.components.schemas[name];
  expect(target, `unresolved ${schema.$ref}`).toBeDefined();
  return resolve(doc, target!);
}

/** Checks a value against a documented schema; returns the mismatches, each with its path. */
function mismatches(doc: Document, schemaIn: Schema, value: unknown, at = "$"): string[] {
  const schema = resolve(doc, schemaIn);
  if (schema.anyOf) {
    return schema.anyOf.some((s) => mismatches(doc, s, value, at).length === 0)
      ? []
      : [`${at}: matches no anyOf option`];
  }
  if (schema.enum && !schema.enum.includes(value)) return [`${at}: ${JSON.stringify(value)} not in enum`];
  const types = schema.type === undefined ? [] : [schema.type].flat();
  const actual = value === null ? "null" : Array.isArray(value) ? "array" : typeof value;
  const ok = types.length === 0 || types.some((t) => t === actual || (t === "integer" && Number.isInteger(value)));
  if (!ok) return [`${at}: ${actual} is not ${types.join("|")}`];
  if (actual === "array" && schema.items) {
    return (value as unknown[]).flatMap((item, i) => mismatches(doc, schema.items!, item, `${at}[${i}]`));
  }
  if (actual !== "object" || !schema.properties) return [];
  const object = value as Record<string, unknown>;
  const problems = (schema.required ?? []).filter((k) => !(k in object)).map((k) => `${at}.${k}: required but missing`);
  for (const [key, item] of Object.entries(object)) {
    const property = schema.properties[key];
    if (property) problems.push(...mismatches(doc, property, item, `${at}.${key}`));
    else problems.push(`${at}.${key}: not documented`);
  }
  return problems;
}

describe("the OpenAPI document", () => {
  it("is OpenAPI 3.1 listing every route, each bearer-protected, tagged and summarised", async () => {
    const doc = await openapi();
    expect(doc.openapi).toBe("3.1.0");
    expect(doc.info).toMatchObject({ title: "edgeq", version: expect.stringMatching(/^\d+\.\d+\.\d+$/) });
    expect(doc.components.securitySchemes).toEqual({
      Bearer: { type: "http", scheme: "bearer" },
      Ticket: { type: "apiKey", in: "query", name: "ticket" },
    });
    const ops = operations(doc);
    expect(ops.map(([name]) => name).sort()).toEqual(Object.keys(OPERATIONS).sort());
    for (const [name, op] of ops) {
      expect(op.security, name).toEqual(
        PUBLIC.has(name) ? [] : UPGRADE.has(name) ? [{ Bearer: [] }, { Ticket: [] }] : [{ Bearer: [] }],
      );
      expect(op.summary?.length, name).toBeGreaterThan(10);
      expect(op.tags?.length, name).toBeGreaterThan(0);
      const success = op.responses[String(OPERATIONS[name])];
      if (UPGRADE.has(name)) {
        expect(success?.content, name).toBeUndefined();
        expect(success?.description, name).toMatch(/StreamMessage/);
        expect(op.parameters, name).toContainEqual(expect.objectContaining({ name: "ticket", in: "query" }));
        expect(op.parameters, name).toContainEqual(expect.objectContaining({ name: "after", in: "query" }));
        continue;
      }
      if (SESSION.has(name)) {
        expect(success?.content, name).toBeUndefined();
        expect(success?.description, name).toMatch(/SessionMessage/);
        expect(op.parameters, name).toContainEqual(expect.objectContaining({ name: "timeout_s", in: "query" }));
        expect(op.parameters, name).toContainEqual(expect.objectContaining({ name: "id", in: "query" }));
        continue;
      }
      const successType = BINARY_RESPONSE.has(name)
        ? BINARY_CONTENT
        : TEXT_RESPONSE.has(name)
          ? TEXT_CONTENT
          : "application/json";
      expect(Object.keys(success?.content ?? {}), name).toEqual([successType]);
      expect(success?.content?.[successType]?.schema, name).toBeDefined();
      for (const status of PUBLIC.has(name) ? [] : ["400", "401", "404"]) {
        expect(resolve(doc, op.responses[status]!.content!["application/json"]!.schema), `${name} ${status}`).toEqual(
          doc.components.schemas.Error,
        );
      }
      // Every path parameter is documented as a required path parameter.
      for (const param of name.match(/\{(\w+)\}/g) ?? []) {
        expect(op.parameters, `${name} ${param}`).toContainEqual(
          expect.objectContaining({ name: param.slice(1, -1), in: "path", required: true }),
        );
      }
    }
  });

  it("documents a required JSON body for every write that takes one, rejecting unknown fields", async () => {
    const doc = await openapi();
    const bodyless = [
      "post /v1/events/tickets",
      "post /v1/tasks/{id}/cancel",
      "post /v1/tasks/{id}/retry",
      "delete /v1/schedules/{name}",
      "post /v1/schedules/{name}/pause",
      "post /v1/schedules/{name}/resume",
      "post /v1/schedules/{name}/trigger",
    ];
    for (const [name, op] of operations(doc)) {
      if (name.startsWith("get ") || bodyless.includes(name)) {
        expect(op.requestBody, name).toBeUndefined();
        continue;
      }
      expect(op.requestBody?.required, name).toBe(true);
      if (BINARY_BODY.has(name)) {
        expect(op.requestBody!.content, name).toEqual({
          [BINARY_CONTENT]: { schema: { type: "string", format: "binary" } },
        });
        continue;
      }
      const schema = resolve(doc, op.requestBody!.content["application/json"]!.schema);
      if (name !== "post /v1/queues/{queue}/tasks") expect(schema.additionalProperties, name).toBe(false);
    }
    const newTask = resolve(doc, { $ref: "#/components/schemas/NewTask" });
    expect(newTask.additionalProperties).toBe(false);
    expect(Object.keys(newTask.properties!).sort()).toEqual(
      [
        "id",
        "type",
        "payload",
        "priority",
        "delay_s",
        "run_at",
        "max_attempts",
        "dedupe_key",
        "group",
        "key",
        "then",
        "depends_on",
        "on_dependency_failure",
        // Start deadlines and uniqueness over time (docs/uniqueness-and-expiry.md).
        "start_by",
        "expires_in_s",
        "idempotency",
        "debounce",
        "singleton",
      ].sort(),
    );
    // Enqueue: one task, or a batch whose documented size limit is the engine's.
    const enqueue = resolve(doc, { $ref: "#/components/schemas/EnqueueBody" });
    const [batch, single] = enqueue.anyOf!.map((s) => resolve(doc, s));
    expect(single).toEqual(newTask);
    expect(batch!.properties!.tasks).toMatchObject({ type: "array", minItems: 1, maxItems: MAX_ENQUEUE_TASKS });
  });

  it("describes what every route really returns (status and body shape, no undocumented fields)", async () => {
    const doc = await openapi();
    const { routes } = await everyRoute();
    for (const route of routes) {
      const res = await callRoute(route);
      expect(res.status, route.operation).toBe(OPERATIONS[route.operation]);
      const op = doc.paths[route.operation.split(" ")[1]!]![route.operation.split(" ")[0]!]!;
      // Their messages: "documents the events streams' messages", test/http/sessions.test.ts.
      if (UPGRADE.has(route.operation) || SESSION.has(route.operation)) continue;
      if (BINARY_RESPONSE.has(route.operation)) {
        // Raw bytes, not JSON: the documented content type, and a body that is no JSON document.
        expect(res.headers.get("Content-Type"), route.operation).toBe(BINARY_CONTENT);
        expect(op.responses[String(res.status)]!.content![BINARY_CONTENT], route.operation).toBeDefined();
        expect(res.body, route.operation).toBeNull();
        continue;
      }
      if (TEXT_RESPONSE.has(route.operation)) {
        expect(res.headers.get("Content-Type"), route.operation).toMatch(/^text\/plain/);
        expect(op.responses[String(res.status)]!.content![TEXT_CONTENT], route.operation).toBeDefined();
        continue;
      }
      const schema = op.responses[String(res.status)]!.content!["application/json"]!.schema;
      expect(mismatches(doc, schema, res.body), route.operation).toEqual([]);
    }
  });

  it("documents the error body every route returns", async () => {
    const doc = await openapi();
    const res = await call("GET", `/v1/tasks/${MISSING_ID}`);
    expect(mismatches(doc, { $ref: "#/components/schemas/Error" }, res.body)).toEqual([]);
    expect(mismatches(doc, { $ref: "#/components/schemas/Error" }, { error: { code: "x" } })).not.toEqual([]);
  });

  it("documents the events streams' messages: what a socket really sends matches StreamMessage", async () => {
    const doc = await openapi();
    const message = { $ref: "#/components/schemas/StreamMessage" };
    const queue = uniqueQueue("openapi-events");
    const stream = await openStream(`/v1/queues/${queue}/events`);
    try {
      const id = await enqueueOne(queue);
      const leased = await leaseOne(queue);
      expect((await complete(id, leased.lease_token)).status).toBe(200);
      await stream.taskEvents(3);
      await stream.next((m) => m.event === "counts");
      for (const m of stream.messages) expect(mismatches(doc, message, m), JSON.stringify(m)).toEqual([]);
      expect(new Set(stream.messages.map((m) => m.event))).toEqual(
        new Set(["hello", "enqueued", "leased", "completed", "counts"]),
      );
    } finally {
      stream.close();
    }
    expect(mismatches(doc, message, { event: "completed", seq: 1 })).not.toEqual([]);
  });

  it("documents /health, public, with the body it answers", async () => {
    const doc = await openapi();
    const res = await call("GET", "/health", { token: null });
    expect(res.status).toBe(200);
    const schema = doc.paths["/health"]!.get!.responses["200"]!.content!["application/json"]!.schema;
    expect(mismatches(doc, schema, res.body)).toEqual([]);
    expect(mismatches(doc, schema, { status: "not_configured" })).not.toEqual([]);
  });

  it("is rendered as the /docs reference: every operation with its schemas, examples and a try-it form", async () => {
    const doc = await openapi();
    const page = await call("GET", "/docs", { token: null });
    expect(page.status).toBe(200);
    // Nothing from elsewhere: one inline script and style, requests to this origin only.
    expect(page.text).not.toMatch(/<script[^>]+src=|<link[^>]+stylesheet|https?:\/\/(?!example\.com)/i);
    expect(page.headers.get("Content-Security-Policy")).toMatch(/default-src 'none'.*connect-src 'self'/);
    for (const [name] of operations(doc)) {
      const [method, path] = name.split(" ");
      const id = `op-${method}-${path!.replace(/[^A-Za-z0-9]+/g, "-").replace(/^-|-$/g, "")}`;
      expect(page.text, name).toContain(`<section class="op" id="${id}">`);
      if (UPGRADE.has(name) || SESSION.has(name))
        expect(page.text, name).toMatch(new RegExp(`id="${id}">[^]*?WebSocket messages`));
      else expect(page.text, name).toContain(`data-method="${method!.toUpperCase()}" data-path="${path}"`);
    }
    // The lease operation: its request body's fields with their bounds, and the example the form starts from.
    const lease = page.text.slice(page.text.indexOf('id="op-post-v1-queues-queue-lease"'));
    const request = lease.slice(lease.indexOf('class="request-schema"'), lease.indexOf("<h4>Responses"));
    expect(request).toMatch(/<code class="prop">max<\/code> <span class="type">integer<\/span>/);
    expect(request).toContain("default 1");
    expect(request).toMatch(/<pre>\{\n {2}&#34;max&#34;: 1,\n {2}&#34;wait_s&#34;: 0\n\}<\/pre>/);
    // Its response: the leased task expanded (a task plus its lease token).
    expect(lease.slice(lease.indexOf("<h4>Responses"), lease.indexOf("</section>"))).toMatch(
      /<code class="prop">lease_token<\/code>[\s\S]*<code class="prop">id<\/code>|<code class="prop">id<\/code>[\s\S]*<code class="prop">lease_token<\/code>/,
    );
  });
});
