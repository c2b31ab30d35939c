import { describe, expect, it } from "vitest";
import { uniqueQueue } from "../helpers";
import { call, enqueueOne, expectError, getTask, lease, type Enqueued } from "./api";

/** Dependencies and fan-in over HTTP: the body's fields, the 400s naming them, the join's reads. */
describe("dependencies over HTTP", () => {
  it("a fan-out with its join in one call: the join waits, then runs and reads each child's result", async () => {
    const queue = uniqueQueue("http-fan");
    const res = await call<Enqueued>("POST", `/v1/queues/${queue}/tasks`, {
      body: {
        tasks: [
          { type: "part", payload: 1 },
          { type: "part", payload: 2 },
        ],
        join: { type: "stitch" },
      },
    });
    expect(res.status).toBe(201);
    expect(res.body.tasks.map((t) => t.state)).toEqual(["pending", "pending"]);
    expect(res.body.join).toMatchObject({ state: "waiting", deduplicated: false });
    const joinId = res.body.join!.id;
    expect(await getTask(joinId)).toMatchObject({ state: "waiting", waiting_on: 2, on_dependency_failure: "fail" });

    const parts = await lease(queue, { max: 10 });
    expect(parts.map((t) => t.type)).toEqual(["part", "part"]);
    for (const t of parts) {
      const done = await call("POST", `/v1/tasks/${t.id}/complete`, {
        body: { lease_token: t.lease_token, result: { n: t.payload } },
      });
      expect(done.status).toBe(200);
    }
    const [join] = await lease(queue, { max: 10 });
    expect(join).toMatchObject({ id: joinId, type: "stitch", state: "processing", waiting_on: 0 });
    const deps = await call<{ dependencies: Array<{ id: string; state: string; result: unknown }> }>(
      "GET",
      `/v1/tasks/${joinId}/dependencies`,
    );
    expect(deps.status).toBe(200);
    expect(deps.body.dependencies.map((d) => d.state)).toEqual(["completed", "completed"]);
    expect(
      deps.body.dependencies.map((d) => d.result).sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1)),
    ).toEqual([{ n: 1 }, { n: 2 }]);
    const dependents = await call<{ dependents: Array<{ id: string }> }>("GET", `/v1/tasks/${parts[0]!.id}/dependents`);
    expect(dependents.body.dependents.map((d) => d.id)).toEqual([joinId]);
  });

  it("depends_on: an unknown id is a 400 naming the field, and nothing of the call is enqueued", async () => {
    const queue = uniqueQueue("http-deps-bad");
    const a = await enqueueOne(queue);
    const res = await call("POST", `/v1/queues/${queue}/tasks`, {
      body: { tasks: [{ type: "ok" }, { depends_on: [a, "01JD3Z8Q9V6Y4T2N1R0M5K7H8K"] }] },
    });
    expectError(res, 400, "invalid_request", /^tasks\[1\]\.depends_on\[1\]: no task/);
    const listed = await call<{ tasks: unknown[] }>("GET", `/v1/queues/${queue}/tasks`);
    expect(listed.body.tasks).toHaveLength(1);

    const one = await call("POST", `/v1/queues/${queue}/tasks`, { body: { on_dependency_failure: "continue" } });
    expectError(one, 400, "invalid_request", /on_dependency_failure/);
    const notId = await call("POST", `/v1/queues/${queue}/tasks`, { body: { depends_on: ["nope"] } });
    expectError(notId, 400, "invalid_request", /depends_on/);
    const fanId = await call("POST", `/v1/queues/${queue}/tasks`, {
      body: { tasks: [{ id: "01JD3Z8Q9V6Y4T2N1R0M5K7H8M" }], join: {} },
    });
    expectError(fanId, 400, "invalid_request", /^tasks\[0\]\.id/);
  });
});
