import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { startDev, until } from "../../dev-server.mjs";

// Two Workers in one `wrangler dev` (one workerd, Workflows emulated locally): this Worker with its
// Workflow, served on the port, and the queue-worker example, reached only through the service binding to
// its EdgeqRpc entrypoint, whose text-stats processor runs the tasks in push mode.
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

test("a Workflow step fans chapters out as edgeq tasks and joins their results", async () => {
  assert.equal((await call("POST", "/setup")).body.mode, "push");
  const chapters = ["one two three", "four five six seven", "eight nine"];
  const { status, body } = await call("POST", "/books", { chapters });
  assert.equal(status, 202);
  const done = await until(async () => {
    const { body: instance } = await call("GET", `/books/${body.id}`);
    assert.notEqual(instance.status, "errored", JSON.stringify(instance.error));
    return instance.status === "complete" ? instance : undefined;
  }, 120_000);
  assert.deepEqual(done.output, { chapters: 3, words: 9, reading_s: 3 });
});
