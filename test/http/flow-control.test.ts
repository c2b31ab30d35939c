import { describe, expect, it } from "vitest";
import { uniqueQueue } from "../helpers";
import { call, expectError, type Leased } from "./api";

// Flow control over HTTP (docs/flow-control.md): the key at enqueue and in the task view, the config's
// validation, pause and resume. The properties themselves are test/engine/flow-*.test.ts's.
describe("flow control over HTTP", () => {
  it("a task's key is set at enqueue and shown; a bad key is a 400 naming the field, nothing stored", async () => {
    const queue = uniqueQueue("flowhttp");
    const ok = await call<{ tasks: { id: string }[] }>("POST", `/v1/queues/${queue}/tasks`, { body: { key: "acme" } });
    expect(ok.status).toBe(201);
    const task = await call<{ key: string | null }>("GET", `/v1/tasks/${ok.body.tasks[0]!.id}`);
    expect(task.body.key).toBe("acme");
    const bad = await call("POST", `/v1/queues/${queue}/tasks`, { body: { tasks: [{}, { key: "has space" }] } });
    expectError(bad, 400, "invalid_request", /tasks\[1\]\.key/);
    const long = await call("POST", `/v1/queues/${queue}/tasks`, { body: { key: "k".repeat(129) } });
    expectError(long, 400, "invalid_request", /key/);
  });

  it("the flow config is validated: an unknown field or a limit out of range is a 400 naming it", async () => {
    const queue = uniqueQueue("flowhttp");
    const unknown = await call("PUT", `/v1/queues/${queue}/config`, { body: { flow: { default: { bogus: 1 } } } });
    expectError(unknown, 400, "invalid_request", /flow\.default/);
    const range = await call("PUT", `/v1/queues/${queue}/config`, {
      body: { flow: { keys: { acme: { concurrency: 0 } } } },
    });
    expectError(range, 400, "invalid_request", /flow\.keys\.acme\.concurrency/);
    const good = await call<{ flow: unknown }>("PUT", `/v1/queues/${queue}/config`, {
      body: { flow: { fair: true, default: { concurrency: 1 } } },
    });
    expect(good.status).toBe(200);
    expect(good.body.flow).toEqual({ fair: true, default: { concurrency: 1 } });
  });

  it("pause and resume a key: its tasks wait, others are leased", async () => {
    const queue = uniqueQueue("flowhttp");
    await call("POST", `/v1/queues/${queue}/tasks`, { body: { tasks: [{ key: "a" }, { key: "b" }] } });
    const paused = await call("POST", `/v1/queues/${queue}/pause`, { body: { key: "a", paused: true } });
    expect(paused.body).toEqual({ queue, key: "a", paused: true });
    const leased = await call<Leased>("POST", `/v1/queues/${queue}/lease`, { body: { max: 10 } });
    expect(leased.body.tasks.map((t) => t.key)).toEqual(["b"]);
    await call("POST", `/v1/queues/${queue}/pause`, { body: { key: "a", paused: false } });
    const after = await call<Leased>("POST", `/v1/queues/${queue}/lease`, { body: { max: 10 } });
    expect(after.body.tasks.map((t) => t.key)).toEqual(["a"]);
    expectError(
      await call("POST", `/v1/queues/${queue}/pause`, { body: { paused: "yes" } }),
      400,
      "invalid_request",
      /paused/,
    );
  });
});
