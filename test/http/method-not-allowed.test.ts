import { describe, expect, it } from "vitest";
import { snapshot, uniqueQueue } from "../helpers";
import { call, enqueueOne, expectError, MISSING_ID, send } from "./api";

interface Document {
  paths: Record<string, Record<string, unknown>>;
}

const METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

/** A concrete URL for a documented path template. */
function concrete(template: string, queue: string): string {
  return template.replace("{queue}", queue).replace("{id}", MISSING_ID).replace("{name}", "a.bin");
}

/** The methods a path documents, as `Allow` lists them: upper-case, HEAD with GET, sorted. */
function allowOf(item: Record<string, unknown>): string[] {
  const methods = Object.keys(item).map((m) => m.toUpperCase());
  if (methods.includes("GET")) methods.push("HEAD");
  return [...new Set(methods)].sort();
}

describe("a wrong method on a known path: 405 method_not_allowed with Allow", () => {
  it("answers every undocumented method of every documented path with 405 and the path's methods", async () => {
    const doc = (await call<Document>("GET", "/openapi.json", { token: null })).body;
    const queue = uniqueQueue("405");
    await enqueueOne(queue);
    const before = await snapshot(queue);
    let checked = 0;
    for (const [template, item] of Object.entries(doc.paths)) {
      const allow = allowOf(item);
      const url = concrete(template, queue);
      for (const method of METHODS.filter((m) => !allow.includes(m))) {
        if (method === "HEAD") {
          // A HEAD answer has no body: the status and Allow say it all.
          const res = await send(method, url);
          expect([res.status, res.headers.get("Allow")], `HEAD ${template}`).toEqual([405, allow.join(", ")]);
        } else {
          const res = await call(method, url, { body: method === "GET" ? undefined : { all: true } });
          const message = new RegExp(`^${method} is not allowed on .*${allow.join(", ")}`);
          expectError(res, 405, "method_not_allowed", message);
          expect(res.headers.get("Allow"), `${method} ${template}`).toBe(allow.join(", "));
        }
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(50);
    expect(await snapshot(queue)).toEqual(before);
  });

  it("does the same for the unauthenticated paths, and still asks for a token on /v1 first", async () => {
    for (const path of ["/health", "/openapi.json", "/docs"]) {
      const res = await call("POST", path, { token: null, body: {} });
      expectError(res, 405, "method_not_allowed");
      expect(res.headers.get("Allow")).toBe("GET, HEAD");
    }
    expectError(await call("DELETE", `/v1/queues/${uniqueQueue()}/tasks`, { token: null }), 401, "unauthorized");
  });

  it("answers HEAD on a GET route, and 404 on a path no route serves", async () => {
    expect((await send("HEAD", "/health", { token: null })).status).toBe(200);
    expectError(await call("GET", "/v1/queues/q/nothing-here"), 404, "not_found");
    expectError(await call("POST", "/v1/tasks"), 404, "not_found");
  });
});
