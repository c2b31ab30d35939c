import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { startDev, until } from "../../dev-server.mjs";

// Two Workers in one `wrangler dev` (one workerd): this producer, served on the port, and the
// queue-worker example, reached only through the producer's service binding to its EdgeqRpc entrypoint.
let dev;
before(async () => {
  dev = await startDev({
    cwd: process.cwd(),
    configs: ["wrangler.toml", "../queue-worker/wrangler.toml"],
    migrate: ["../queue-worker/wrangler.toml"],
    ready: "/",
  });
});
after(() => dev?.stop());

const call = async (method, path, body) => {
  const res = await fetch(dev.url + path, { method, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: res.status, body: await res.json() };
};

test("a task enqueued through the binding is run by the other Worker's processor", async () => {
  assert.equal((await call("POST", "/setup")).body.mode, "push");
  const { status, body } = await call("POST", "/transcripts", { text: "one two three four five six" });
  assert.equal(status, 202);
  const done = await until(async () => {
    const { body: task } = await call("GET", `/transcripts/${body.id}`);
    return task.state === "completed" ? task : undefined;
  });
  assert.deepEqual(done.result, { words: 6, reading_s: 2 });
});

test("a payload its processor refuses is refused at enqueue, the field named; a refusal crosses the binding with its code", async () => {
  const { status, body } = await call("POST", "/transcripts", { text: 42 });
  // The push queue checks the payload against text-stats, which will run it: refused, nothing enqueued.
  assert.equal(status, 400);
  assert.equal(body.error.code, "invalid_request");
  assert.match(body.error.message, /^payload\.text: /);
  const missing = await call("GET", "/transcripts/01ARZ3NDEKTSV4RRFFQ69G5FAV");
  assert.equal(missing.status, 404);
  assert.equal(missing.body.error.code, "not_found");
});
