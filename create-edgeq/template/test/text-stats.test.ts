import { env, exports } from "cloudflare:workers";
import { expect, it, vi } from "vitest";

/** A call to the Worker's HTTP API as a client sends it: the bearer token, JSON in and out. */
async function call<T>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
  const res = await exports.default.fetch(`http://queue.test${path}`, {
    method,
    headers: { Authorization: `Bearer ${env.EDGEQ_TOKEN}`, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json<T>() };
}

interface Task {
  id: string;
  state: string;
  result: unknown;
  progress: number;
}

/** The task once it has finished, completed or dead: a push queue runs it in the queue's Durable Object. */
const finished = (id: string) =>
  vi.waitFor(
    async () => {
      const { body } = await call<Task>("GET", `/v1/tasks/${id}`);
      expect(["completed", "dead"]).toContain(body.state);
      return body;
    },
    { timeout: 10_000, interval: 50 },
  );

it("lists the Worker's processor", async () => {
  const { body } = await call<{ processors: Array<{ type: string }> }>("GET", "/v1/processors");
  expect(body.processors.map((p) => p.type)).toEqual(["text-stats"]);
});

it("runs text-stats on a push queue: enqueued over HTTP, completed with its result", async () => {
  expect((await call("PUT", "/v1/queues/transcripts/config", { mode: "push" })).status).toBe(200);
  const { status, body } = await call<{ tasks: Task[] }>("POST", "/v1/queues/transcripts/tasks", {
    type: "text-stats",
    payload: { text: "the quick brown fox jumps over the lazy dog", wpm: 90 },
  });
  expect(status).toBe(201);

  const task = await finished(body.tasks[0]!.id);
  expect(task).toMatchObject({ state: "completed", result: { words: 9, reading_s: 6 }, progress: 100 });
});

it("refuses a request without the token", async () => {
  const res = await exports.default.fetch("http://queue.test/v1/queues/transcripts/stats");
  expect(res.status).toBe(401);
});
