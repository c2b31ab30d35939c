import { describe, expect, it } from "vitest";
import { REFERENCE_REGISTRY } from "../helpers";
import { uniqueQueue } from "../helpers";
import { call, MISSING_ID } from "./api";
import { isValid, type JsonSchema } from "./json-schema";

interface Document {
  paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: JsonSchema }> } }>>;
  components: { schemas: Record<string, JsonSchema> };
}

async function openapi(): Promise<Document> {
  return (await call<Document>("GET", "/openapi.json", { token: null })).body;
}

function bodySchema(doc: Document, method: string, path: string): JsonSchema {
  return doc.paths[path]![method]!.requestBody!.content["application/json"]!.schema;
}

const soon = () => new Date(Date.now() + 3_600_000).toISOString();

/** Request bodies around each rule that spans fields, for routes whose template has only {queue}. */
const BODIES: Array<{ method: string; path: string; bodies: unknown[] }> = [
  {
    method: "post",
    path: "/v1/queues/{queue}/cancel",
    bodies: [{}, { group: "g" }, { all: true }, { group: "g", all: true }, { all: false }, { group: "" }],
  },
  {
    method: "post",
    path: "/v1/queues/{queue}/purge",
    bodies: [
      {},
      { before: soon() },
      { older_than_s: 60 },
      { before: soon(), older_than_s: 60 },
      { states: ["completed"] },
      { older_than_s: 60, states: ["completed", "dead"] },
    ],
  },
  {
    method: "post",
    path: "/v1/queues/{queue}/tasks",
    bodies: [
      {},
      { delay_s: 5 },
      { run_at: soon() },
      { delay_s: 5, run_at: soon() },
      { tasks: [{ delay_s: 1 }, { run_at: soon() }] },
      { tasks: [{}, { delay_s: 1, run_at: soon() }] },
    ],
  },
  {
    method: "put",
    path: "/v1/queues/{queue}/config",
    bodies: [
      { processor: "echo" },
      { processor: "no-such-processor" },
      { processor: "my processor" },
      { processor: null },
      { mode: "push", processor: "tag", concurrency: 2 },
      { backoff_base_s: 10, backoff_cap_s: 20 },
    ],
  },
  {
    method: "post",
    path: "/v1/queues/{queue}/ack",
    bodies: [
      {},
      { complete: [] },
      { complete: [], fail: [], release: [] },
      { release: [{ id: MISSING_ID, lease_token: "t" }] },
      { complete: [], fail: [{ id: MISSING_ID, lease_token: "t", error: "x" }] },
    ],
  },
];

describe("the OpenAPI document states the rules the server enforces", () => {
  it("accepts exactly the bodies the server accepts, for every rule that spans fields", async () => {
    const doc = await openapi();
    const disagreements: string[] = [];
    for (const { method, path, bodies } of BODIES) {
      const schema = bodySchema(doc, method, path);
      for (const body of bodies) {
        const documented = isValid(schema, body, doc.components.schemas);
        const res = await call(method.toUpperCase(), path.replace("{queue}", uniqueQueue("rules")), { body });
        expect([200, 201, 400], `${method} ${path} ${JSON.stringify(body)}: ${res.text}`).toContain(res.status);
        if (documented !== res.status < 300) {
          disagreements.push(`${method} ${path} ${JSON.stringify(body)}: document ${documented}, server ${res.status}`);
        }
      }
    }
    expect(disagreements).toEqual([]);
  });

  it("lists the registered processors as the config's processor enum", async () => {
    const doc = await openapi();
    const put = bodySchema(doc, "put", "/v1/queues/{queue}/config");
    expect(put.properties!.processor!.enum).toEqual([...REFERENCE_REGISTRY.list().map((p) => p.type), null]);
  });

  it("says in words what JSON Schema cannot: backoff_cap_s >= backoff_base_s, run_at within 365 days", async () => {
    const doc = await openapi();
    const put = bodySchema(doc, "put", "/v1/queues/{queue}/config") as JsonSchema & { description?: string };
    expect(put.description).toMatch(/backoff_cap_s must be at least backoff_base_s/);
    const runAt = doc.components.schemas.NewTask!.properties!.run_at as JsonSchema & { description?: string };
    expect(runAt.description).toMatch(/365 days.*not with delay_s/);
  });
});
