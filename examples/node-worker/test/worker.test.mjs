import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { after, before, test } from "node:test";
import { apiCaller, startDev, until } from "../../dev-server.mjs";

// worker.mjs against the queue-worker example served by wrangler dev: it completes tasks enqueued over
// HTTP, a payload its schema refuses is dead, and SIGTERM stops it cleanly with nothing left leased.
const TOKEN = "example-dev-token";
let dev;
before(async () => {
  const cwd = new URL("../../queue-worker/", import.meta.url).pathname;
  dev = await startDev({ cwd, configs: ["wrangler.toml"], migrate: ["wrangler.toml"], ready: "/health" });
});
after(() => dev?.stop());

const api = apiCaller(() => dev.url, TOKEN);
const call = async (method, path, body) => (await api(method, path, body)).body;

test("worker.mjs completes the queue's tasks and stops on SIGTERM with nothing leased", async () => {
  const titles = ["Hello, Edge Queue!", "  Ünïcode Títle  ", "a/b/c"];
  const { tasks } = await call("POST", "/v1/queues/slugs/tasks", {
    tasks: [...titles.map((title) => ({ payload: { title } })), { payload: { title: "" } }],
  });
  const worker = spawn(process.execPath, ["worker.mjs"], {
    env: { ...process.env, EDGEQ_URL: dev.url, EDGEQ_TOKEN: TOKEN },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  worker.stdout.on("data", (chunk) => (output += chunk));
  worker.stderr.on("data", (chunk) => (output += chunk));
  const exited = new Promise((resolve) => worker.on("exit", (code, signal) => resolve({ code, signal })));
  try {
    const settled = await until(async () => {
      const views = await Promise.all(tasks.map((t) => call("GET", `/v1/tasks/${t.id}`)));
      return views.every((v) => v.state === "completed" || v.state === "dead") ? views : undefined;
    });
    assert.deepEqual(
      settled.slice(0, 3).map((v) => v.result),
      [{ slug: "hello-edge-queue" }, { slug: "unicode-title" }, { slug: "a-b-c" }],
    );
    assert.equal(settled[3].state, "dead");
    assert.match(settled[3].errors[0].message, /title/);
  } finally {
    worker.kill("SIGTERM");
  }
  const { code } = await exited;
  assert.equal(code, 0, output);
  assert.match(output, /completed /);
  // The failed event's error is the message (a string): the line names what the schema refused.
  assert.match(output, new RegExp(`failed ${tasks[3].id}: .*title`));
  const stats = await call("GET", "/v1/queues/slugs/stats");
  assert.equal(stats.counts.processing, 0);
});
