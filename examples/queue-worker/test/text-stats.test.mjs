import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { apiCaller, startDev, until } from "../../dev-server.mjs";

// This Worker under `wrangler dev`: its own processor runs tasks enqueued over edgeq's HTTP API.
const TOKEN = "example-dev-token"; // .dev.vars
let dev;
before(async () => {
  dev = await startDev({
    cwd: process.cwd(),
    configs: ["wrangler.toml"],
    migrate: ["wrangler.toml"],
    ready: "/health",
  });
});
after(() => dev?.stop());

const call = apiCaller(() => dev.url, TOKEN);
const settled = (id) =>
  until(async () => {
    const { body } = await call("GET", `/v1/tasks/${id}`);
    return ["completed", "dead"].includes(body.state) ? body : undefined;
  });

test("lists the Worker's processor", async () => {
  const { body } = await call("GET", "/v1/processors");
  assert.deepEqual(
    body.processors.map((p) => p.type),
    ["text-stats"],
  );
});

test("runs text-stats in push mode and stores its result and progress", async () => {
  assert.equal((await call("PUT", "/v1/queues/transcripts/config", { mode: "push" })).status, 200);
  const text = "the quick brown fox jumps over the lazy dog";
  const { status, body } = await call("POST", "/v1/queues/transcripts/tasks", {
    type: "text-stats",
    payload: { text, wpm: 90 },
  });
  assert.equal(status, 201);
  const task = await settled(body.tasks[0].id);
  assert.equal(task.state, "completed");
  assert.deepEqual(task.result, { words: 9, reading_s: 6 });
  assert.equal(task.progress, 100);
});

test("a payload its schema refuses is refused at enqueue, the field named", async () => {
  const { status, body } = await call("POST", "/v1/queues/transcripts/tasks", {
    type: "text-stats",
    payload: { text: "" },
  });
  // A push queue checks each task against the processor that will run it.
  assert.equal(status, 400);
  assert.equal(body.error.code, "invalid_request");
  assert.match(body.error.message, /^payload\.text: .*processor "text-stats"/);
});

test("without the token the API refuses", async () => {
  const res = await fetch(`${dev.url}/v1/queues/transcripts/stats`);
  assert.equal(res.status, 401);
});
