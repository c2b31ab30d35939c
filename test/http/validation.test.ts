import { describe, expect, it } from "vitest";
import { uniqueQueue } from "../helpers";
import { call, expectError, getTask, MISSING_ID } from "./api";
import { body, enqueuePath, fixture, queuePath, rejects, type Case } from "./validation-cases";

const enqueueCases: Case[] = [
  {
    label: "a fractional priority",
    method: "POST",
    path: enqueuePath,
    opts: body({ priority: 1.5 }),
    message: /^priority: .*int/,
  },
  {
    label: "a string priority",
    method: "POST",
    path: enqueuePath,
    opts: body({ priority: "high" }),
    message: /^priority: /,
  },
  {
    label: "a priority out of range",
    method: "POST",
    path: enqueuePath,
    opts: body({ priority: 1e7 }),
    message: /^priority: /,
  },
  {
    label: "a negative delay in a batch",
    method: "POST",
    path: enqueuePath,
    opts: body({ tasks: [{}, { delay_s: -1 }] }),
    message: /^tasks\[1\]\.delay_s: /,
  },
  {
    label: "a delay over a year",
    method: "POST",
    path: enqueuePath,
    opts: body({ delay_s: 400 * 86_400 }),
    message: /^delay_s: /,
  },
  {
    label: "zero max_attempts",
    method: "POST",
    path: enqueuePath,
    opts: body({ max_attempts: 0 }),
    message: /^max_attempts: /,
  },
  {
    label: "a malformed run_at",
    method: "POST",
    path: enqueuePath,
    opts: body({ run_at: "tomorrow" }),
    message: /^run_at: /,
  },
  {
    label: "a type with spaces",
    method: "POST",
    path: enqueuePath,
    opts: body({ type: "send email" }),
    message: /^type: /,
  },
  {
    label: "an empty dedupe_key",
    method: "POST",
    path: enqueuePath,
    opts: body({ dedupe_key: "" }),
    message: /^dedupe_key: /,
  },
  {
    label: "a malformed client id",
    method: "POST",
    path: enqueuePath,
    opts: body({ id: "task-1" }),
    message: /^id: .*ULID/,
  },
  {
    label: "an unknown task field",
    method: "POST",
    path: enqueuePath,
    opts: body({ payload: 1, colour: "red" }),
    message: /colour/,
  },
  {
    label: "an unknown field in a batch task",
    method: "POST",
    path: enqueuePath,
    opts: body({ tasks: [{ payload: 1, colour: "red" }] }),
    message: /^tasks\[0\]: .*colour/,
  },
  {
    label: "delay_s and run_at together",
    method: "POST",
    path: enqueuePath,
    opts: body({ delay_s: 5, run_at: "2030-01-01T00:00:00Z" }),
    message: /^run_at: give delay_s or run_at, not both/,
  },
  {
    label: "delay_s and run_at together in a batch",
    method: "POST",
    path: enqueuePath,
    opts: body({ tasks: [{}, { delay_s: 5, run_at: "2030-01-01T00:00:00Z" }] }),
    message: /^tasks\[1\]\.run_at: give delay_s or run_at/,
  },
  { label: "an empty batch", method: "POST", path: enqueuePath, opts: body({ tasks: [] }), message: /^tasks: / },
  {
    label: "a fractional priority in a batch",
    method: "POST",
    path: enqueuePath,
    opts: body({ tasks: [{ priority: 1.5 }] }),
    message: /^tasks\[0\]\.priority: .*int/,
  },
  {
    label: "a string priority in a batch",
    method: "POST",
    path: enqueuePath,
    opts: body({ tasks: [{}, { priority: "x" }] }),
    message: /^tasks\[1\]\.priority: /,
  },
  {
    label: "a batch that is not an array",
    method: "POST",
    path: enqueuePath,
    opts: body({ tasks: "x" }),
    message: /^tasks: .*array/,
  },
  {
    label: "a batch item that is not an object",
    method: "POST",
    path: enqueuePath,
    opts: body({ tasks: [1] }),
    message: /^tasks\[0\]: .*object/,
  },
  {
    label: "a run_at more than 365 days ahead",
    method: "POST",
    path: enqueuePath,
    opts: () => ({ body: { run_at: new Date(Date.now() + 366 * 86_400_000).toISOString() } }),
    message: /^run_at: at most 31536000 s/,
  },
  {
    label: "an array body",
    method: "POST",
    path: enqueuePath,
    opts: body([{ payload: 1 }]),
    message: /expected object/,
  },
  { label: "a null body", method: "POST", path: enqueuePath, opts: body(null), message: /expected object/ },
  // Path parameters.
  {
    label: "a queue name with a space",
    method: "POST",
    path: () => "/v1/queues/bad%20name/tasks",
    opts: body({}),
    message: /^queue: /,
  },
  { label: "a queue name starting with '-'", method: "GET", path: () => "/v1/queues/-q/stats", message: /^queue: / },
  {
    label: "a queue name over 64 characters",
    method: "GET",
    path: () => `/v1/queues/${"q".repeat(65)}/config`,
    message: /^queue: /,
  },
  { label: "a task id that is not a ULID", method: "GET", path: () => "/v1/tasks/not-a-ulid", message: /^id: .*ULID/ },
  {
    label: "a task id with a letter ULIDs never use",
    method: "POST",
    path: () => `/v1/tasks/${MISSING_ID.slice(0, 25)}U/cancel`,
    message: /^id: /,
  },
];

const queueCases: Case[] = [
  { label: "list limit 0", method: "GET", path: (f) => `/v1/queues/${f.queue}/tasks?limit=0`, message: /^limit: / },
  {
    label: "a non-numeric list limit",
    method: "GET",
    path: (f) => `/v1/queues/${f.queue}/tasks?limit=ten`,
    message: /^limit: /,
  },
  {
    label: "an unknown list state",
    method: "GET",
    path: (f) => `/v1/queues/${f.queue}/tasks?state=running`,
    message: /^state: /,
  },
  {
    label: "a malformed cursor",
    method: "GET",
    path: (f) => `/v1/queues/${f.queue}/tasks?cursor=page2`,
    message: /^cursor: /,
  },
  {
    label: "an empty stats group",
    method: "GET",
    path: (f) => `/v1/queues/${f.queue}/stats?group=`,
    message: /^group: /,
  },
  {
    label: "purge with before and older_than_s",
    method: "POST",
    path: queuePath("purge"),
    opts: body({ before: "2030-01-01T00:00:00Z", older_than_s: 1 }),
    message: /^before: give exactly one of before or older_than_s/,
  },
  {
    label: "purge of a live state",
    method: "POST",
    path: queuePath("purge"),
    opts: body({ states: ["pending"] }),
    message: /^states\[0\]: /,
  },
  {
    label: "redrive of pending tasks",
    method: "POST",
    path: queuePath("redrive"),
    opts: body({ state: "pending" }),
    message: /^state: /,
  },
  {
    label: "redrive limit 0",
    method: "POST",
    path: queuePath("redrive"),
    opts: body({ limit: 0 }),
    message: /^limit: /,
  },
  {
    label: "cancel-queue with an unknown field",
    method: "POST",
    path: queuePath("cancel"),
    opts: body({ all: true, everything: true }),
    message: /everything/,
  },
  {
    label: "cancel-queue that names neither a group nor all (an empty body cancels nothing)",
    method: "POST",
    path: queuePath("cancel"),
    opts: body({}),
    message: /^group: give either "group" or "all": true/,
  },
  {
    label: "purge without a cutoff (an empty body deletes nothing)",
    method: "POST",
    path: queuePath("purge"),
    opts: body({}),
    message: /^before: give exactly one of before or older_than_s/,
  },
  {
    label: "a config with an unknown field",
    method: "PUT",
    path: queuePath("config"),
    opts: body({ max_retries: 3 }),
    message: /max_retries/,
  },
  {
    label: "a config with max_attempts 0",
    method: "PUT",
    path: queuePath("config"),
    opts: body({ max_attempts: 0 }),
    message: /^max_attempts: /,
  },
  {
    label: "a config with cap below base",
    method: "PUT",
    path: queuePath("config"),
    opts: body({ backoff_base_s: 60, backoff_cap_s: 30 }),
    message: /backoff_cap_s \(30\) must be at least backoff_base_s \(60\)/,
  },
];

describe("enqueue and path parameters: 400 invalid_request naming the field, nothing changed", () => {
  rejects(enqueueCases);

  it("accepts lower-case ULIDs and names the same task", async () => {
    const f = await fixture();
    expect((await getTask(f.pending.toLowerCase())).id).toBe(f.pending);
  });
});

describe("queue operations: 400 invalid_request naming the field, nothing changed", () => {
  rejects(queueCases);

  it("checks the stored config, not only the patch, for cap >= base", async () => {
    const queue = uniqueQueue("val");
    const put = await call("PUT", `/v1/queues/${queue}/config`, { body: { backoff_base_s: 20, backoff_cap_s: 40 } });
    expect(put.status).toBe(200);
    expectError(
      await call("PUT", `/v1/queues/${queue}/config`, { body: { backoff_cap_s: 10 } }),
      400,
      "invalid_request",
      /^backoff_cap_s \(10\) must be at least backoff_base_s \(20\)/,
    );
    const config = await call("GET", `/v1/queues/${queue}/config`);
    expect(config.body).toMatchObject({ backoff_base_s: 20, backoff_cap_s: 40 });
  });
});
