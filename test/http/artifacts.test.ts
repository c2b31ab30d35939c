import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { MAX_ARTIFACT_BYTES } from "../../src/contracts/limits";
import { artifactKey } from "../../src/storage/artifacts";
import { uniqueQueue } from "../helpers";
import {
  call,
  complete,
  enqueueOne,
  expectError,
  expireLease,
  leaseOne,
  MISSING_ID,
  read,
  send,
  type CallOptions,
  type LeasedTask,
} from "./api";

interface Artifact {
  name: string;
  content_type: string;
  size: number;
}

/** Every byte value, so any re-encoding of the body would show. */
const BYTES = Uint8Array.from({ length: 256 }, (_, i) => i);

/** A leased task to attach artifacts to. */
async function leasedTask(): Promise<LeasedTask> {
  const queue = uniqueQueue("art");
  const id = await enqueueOne(queue);
  const leased = await leaseOne(queue);
  expect(leased.id).toBe(id);
  return leased;
}

function upload(id: string, name: string, token: string | null, bytes: Uint8Array = BYTES, extra: CallOptions = {}) {
  return call<Artifact>("PUT", `/v1/tasks/${id}/artifacts/${name}`, {
    raw: bytes,
    contentType: "audio/mpeg",
    ...extra,
    headers: {
      "Content-Length": String(bytes.byteLength),
      ...(token === null ? {} : { "Edgeq-Lease-Token": token }),
      ...extra.headers,
    },
  });
}

/** The keys R2 holds under a task's prefix. */
async function storedKeys(id: string): Promise<string[]> {
  return (await env.ARTIFACTS.list({ prefix: `tasks/${id}/` })).objects.map((o) => o.key);
}

describe("artifact upload and download", () => {
  it("stores an upload fenced by the lease token, streams the exact bytes back and lists it", async () => {
    const task = await leasedTask();
    const put = await upload(task.id, "item-0001.mp3", task.lease_token);
    expect([put.status, put.body]).toEqual([201, { name: "item-0001.mp3", content_type: "audio/mpeg", size: 256 }]);
    const stored = await env.ARTIFACTS.head(artifactKey(task.id, "item-0001.mp3"));
    expect(stored?.size).toBe(256);

    const res = await send("GET", `/v1/tasks/${task.id}/artifacts/item-0001.mp3`);
    expect(res.status).toBe(200);
    expect(res.headers.get("Content-Type")).toBe("audio/mpeg");
    expect(res.headers.get("Content-Length")).toBe("256");
    expect(new Uint8Array(await res.arrayBuffer())).toEqual(BYTES);

    const text = new TextEncoder().encode("hello");
    const second = await upload(task.id, "notes.txt", task.lease_token, text, { contentType: "text/plain" });
    expect(second.body).toEqual({ name: "notes.txt", content_type: "text/plain", size: 5 });
    const list = await call<{ artifacts: Artifact[] }>("GET", `/v1/tasks/${task.id}/artifacts`);
    expect([list.status, list.body]).toEqual([
      200,
      {
        artifacts: [
          { name: "item-0001.mp3", content_type: "audio/mpeg", size: 256 },
          { name: "notes.txt", content_type: "text/plain", size: 5 },
        ],
      },
    ]);
  });

  it("stores a body sent without a Content-Type as application/octet-stream, and replaces it on a second upload", async () => {
    const task = await leasedTask();
    const first = await upload(task.id, "data.bin", task.lease_token, BYTES, { contentType: null });
    expect(first.body).toEqual({ name: "data.bin", content_type: "application/octet-stream", size: 256 });
    const smaller = Uint8Array.from([9, 8, 7]);
    const second = await upload(task.id, "data.bin", task.lease_token, smaller, { contentType: null });
    expect(second.body).toEqual({ name: "data.bin", content_type: "application/octet-stream", size: 3 });
    const res = await send("GET", `/v1/tasks/${task.id}/artifacts/data.bin`);
    expect(new Uint8Array(await res.arrayBuffer())).toEqual(smaller);
  });

  it("stores an empty artifact", async () => {
    const task = await leasedTask();
    const put = await upload(task.id, "empty.txt", task.lease_token, new Uint8Array(0), { contentType: "text/plain" });
    expect([put.status, put.body]).toEqual([201, { name: "empty.txt", content_type: "text/plain", size: 0 }]);
    const res = await send("GET", `/v1/tasks/${task.id}/artifacts/empty.txt`);
    expect([res.status, res.headers.get("Content-Length"), await res.text()]).toEqual([200, "0", ""]);
  });

  it("lists no artifacts for a task that has none", async () => {
    const task = await leasedTask();
    const list = await call("GET", `/v1/tasks/${task.id}/artifacts`);
    expect([list.status, list.body]).toEqual([200, { artifacts: [] }]);
  });
});

describe("artifact uploads need a live lease", () => {
  it("refuses a wrong token with 409 lease_lost and stores nothing", async () => {
    const task = await leasedTask();
    expectError(await upload(task.id, "a.mp3", "wrong-token"), 409, "lease_lost");
    expect(await env.ARTIFACTS.head(artifactKey(task.id, "a.mp3"))).toBeNull();
    expect(await storedKeys(task.id)).toEqual([]);
  });

  it("refuses an expired lease's token with 409 lease_lost and stores nothing", async () => {
    const task = await leasedTask();
    await expireLease(task.id);
    expectError(await upload(task.id, "a.mp3", task.lease_token), 409, "lease_lost");
    expect(await env.ARTIFACTS.head(artifactKey(task.id, "a.mp3"))).toBeNull();
  });

  it("refuses the token of a task that has completed", async () => {
    const task = await leasedTask();
    expect((await complete(task.id, task.lease_token)).status).toBe(200);
    expectError(await upload(task.id, "late.mp3", task.lease_token), 409, "lease_lost");
    expect(await storedKeys(task.id)).toEqual([]);
  });

  it("refuses an upload without the lease token header (400 naming it) and stores nothing", async () => {
    const task = await leasedTask();
    expectError(await upload(task.id, "a.mp3", null), 400, "invalid_request", /edgeq-lease-token/i);
    expect(await storedKeys(task.id)).toEqual([]);
  });

  it("refuses an upload of unknown length (no Content-Length) with 400 and stores nothing", async () => {
    const task = await leasedTask();
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(BYTES);
        controller.close();
      },
    });
    const req = new Request(`http://edgeq.test/v1/tasks/${task.id}/artifacts/a.mp3`, {
      method: "PUT",
      body: stream,
      headers: { Authorization: "Bearer test-token", "Edgeq-Lease-Token": task.lease_token },
    });
    expect(req.headers.get("Content-Length")).toBeNull();
    const res = await read<unknown>(await exports.default.fetch(req));
    expectError(res, 400, "invalid_request", /Content-Length/);
    expect(await storedKeys(task.id)).toEqual([]);
  });

  it("refuses a declared length over the artifact limit with 413 before reading the body", async () => {
    const task = await leasedTask();
    const res = await upload(task.id, "huge.bin", task.lease_token, BYTES, {
      headers: { "Content-Length": String(MAX_ARTIFACT_BYTES + 1) },
    });
    expectError(res, 413, "payload_too_large", new RegExp(`${MAX_ARTIFACT_BYTES} bytes`));
    expect(await storedKeys(task.id)).toEqual([]);
  });

  it("answers 404 for an upload to an unknown task and stores nothing", async () => {
    expectError(await upload(MISSING_ID, "a.mp3", "any-token"), 404, "not_found");
    expect(await storedKeys(MISSING_ID)).toEqual([]);
  });
});

describe("artifact names and lookups", () => {
  it("rejects names that are not a plain file name, and stores nothing anywhere", async () => {
    const task = await leasedTask();
    // Percent-encoded, the name reaches the route and fails its pattern: 400 naming `name`.
    for (const name of ["..%2Fx", "a%2Fb", ".hidden", "x".repeat(129), "sp%20ace"]) {
      const res = await upload(task.id, name, task.lease_token);
      expect(res.status, name).toBe(400);
      expectError(res, 400, "invalid_request", /^name: /);
    }
    // Unencoded (or as encoded dots, which URLs treat as dot segments), the path is normalised or has an
    // extra segment: no route matches (404), nothing runs.
    for (const path of ["../x", "a/b", "..", "%2E%2E", "%2e%2e/x"]) {
      const res = await upload(task.id, path, task.lease_token);
      expect(res.status, path).toBe(404);
      expectError(res, 404, "not_found", /no route/);
    }
    expect(await storedKeys(task.id)).toEqual([]);
    for (const key of [`tasks/${task.id}/../x`, `tasks/${task.id}/a/b`, `tasks/${task.id}/x`, "tasks/x", "x"]) {
      expect(await env.ARTIFACTS.head(key), key).toBeNull();
    }
  });

  it("answers 404 with a JSON error for a missing artifact and for an unknown task", async () => {
    const task = await leasedTask();
    expectError(await call("GET", `/v1/tasks/${task.id}/artifacts/none.mp3`), 404, "not_found", /none\.mp3/);
    expectError(await call("GET", `/v1/tasks/${MISSING_ID}/artifacts`), 404, "not_found", new RegExp(MISSING_ID));
    expectError(await call("GET", `/v1/tasks/${MISSING_ID}/artifacts/a.mp3`), 404, "not_found");
    expectError(await call("GET", `/v1/tasks/${task.id}/artifacts/bad%2Fname`), 400, "invalid_request", /^name: /);
  });
});

describe("artifact routes need the bearer token", () => {
  it("answers 401 without it and stores nothing", async () => {
    const task = await leasedTask();
    await upload(task.id, "kept.mp3", task.lease_token);
    for (const [method, path] of [
      ["GET", `/v1/tasks/${task.id}/artifacts`],
      ["GET", `/v1/tasks/${task.id}/artifacts/kept.mp3`],
    ] as const) {
      expectError(await call(method, path, { token: null }), 401, "unauthorized");
    }
    expectError(await upload(task.id, "new.mp3", task.lease_token, BYTES, { token: null }), 401, "unauthorized");
    expectError(
      await upload(task.id, "kept.mp3", task.lease_token, BYTES.slice(0, 1), { token: "wrong" }),
      401,
      "unauthorized",
    );
    expect(await storedKeys(task.id)).toEqual([artifactKey(task.id, "kept.mp3")]);
    expect((await env.ARTIFACTS.head(artifactKey(task.id, "kept.mp3")))?.size).toBe(256);
  });
});
