import { describe, expect, inject, it } from "vitest";
import { freePort } from "../../scripts/wrangler-dev.mjs";
import { EdgeqClient, EdgeqError } from "../../src/client/index";
import { uniqueQueue } from "./worker-support";

/** edgeq/client against a real `wrangler dev` (test/cli/server.ts): typed answers, and refusals as
 * EdgeqError with the API's code and the HTTP status. */

const client = () => new EdgeqClient({ url: inject("edgeqUrl"), token: inject("edgeqToken") });

/** The EdgeqError a call rejects with (fails the test when it resolves or throws anything else). */
async function refusal(call: Promise<unknown>): Promise<EdgeqError> {
  const error: unknown = await call.then(
    () => new Error("expected a refusal, got an answer"),
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(EdgeqError);
  return error as EdgeqError;
}

describe("EdgeqClient", () => {
  it("enqueues, leases, heartbeats, completes, reads and lists", async () => {
    const edgeq = client();
    const queue = uniqueQueue("client");
    const { tasks } = await edgeq.enqueue(queue, { type: "t", payload: { n: 1 } });
    expect(tasks).toEqual([{ id: expect.any(String), state: "pending", deduplicated: false }]);
    const [leased] = await edgeq.lease(queue, { max: 1 });
    expect(leased).toMatchObject({ id: tasks[0]!.id, payload: { n: 1 }, state: "processing" });
    const beat = await edgeq.heartbeat(leased!.id, { lease_token: leased!.lease_token, progress: 40 });
    expect(beat.progress).toBe(40);
    const outcome = await edgeq.complete(leased!.id, { lease_token: leased!.lease_token, result: { ok: true } });
    expect(outcome).toMatchObject({ state: "completed", repeated: false });
    expect(await edgeq.get(leased!.id)).toMatchObject({ state: "completed", result: { ok: true } });
    const page = await edgeq.list(queue, { state: "completed" });
    expect(page.tasks.map((t) => t.id)).toEqual([leased!.id]);
    expect((await edgeq.stats(queue)).counts.completed).toBe(1);
  });

  it("throws the API's refusals as EdgeqError with code, status and the message naming the field", async () => {
    const edgeq = client();
    const queue = uniqueQueue("client-refusals");
    const missing = await refusal(edgeq.get("01JD3Z8Q9V6Y4T2N1R0M5K7H8G"));
    expect({ code: missing.code, status: missing.status, transient: missing.transient }).toEqual({
      code: "not_found",
      status: 404,
      transient: false,
    });
    const invalid = await refusal(edgeq.enqueue(queue, { type: "t", priority: 1.5 }));
    expect({ code: invalid.code, status: invalid.status }).toEqual({ code: "invalid_request", status: 400 });
    expect(invalid.message).toMatch(/priority/);
    const { tasks } = await edgeq.enqueue(queue, { type: "t" });
    const [leased] = await edgeq.lease(queue, { max: 1 });
    const lost = await refusal(edgeq.complete(tasks[0]!.id, { lease_token: `${leased!.lease_token}x` }));
    expect({ code: lost.code, status: lost.status }).toEqual({ code: "lease_lost", status: 409 });
    const badToken = new EdgeqClient({ url: inject("edgeqUrl"), token: "wrong" });
    const unauthorized = await refusal(badToken.stats(queue));
    expect({ code: unauthorized.code, status: unauthorized.status }).toEqual({ code: "unauthorized", status: 401 });
  });

  it("reports a server it cannot reach as unreachable (status 0, transient)", async () => {
    const port = await freePort();
    const nowhere = new EdgeqClient({ url: `http://127.0.0.1:${port}`, token: "t" });
    const error = await refusal(nowhere.stats("q"));
    expect({ code: error.code, status: error.status, transient: error.transient }).toEqual({
      code: "unreachable",
      status: 0,
      transient: true,
    });
    expect(error.message).toContain(`cannot reach http://127.0.0.1:${port}`);
  });

  it("answers withdraw of an unknown poll without error", async () => {
    const answer = await client().withdraw(uniqueQueue("client-withdraw"), "w-none");
    expect(answer).toEqual({ withdrawn: false });
  });
});
