import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { rpcErrorOf } from "../../src/rpc/rpc-errors";
import { getTask } from "../http/api";
import { uniqueQueue } from "../helpers";

/** The Worker's own EdgeqRpc entrypoint through its loopback binding: a real RPC call, no HTTP. */
const edgeq = () => exports.EdgeqRpc;

/** The code and message of a refused call. */
async function refusal(call: Promise<unknown>) {
  try {
    await call;
  } catch (error) {
    const coded = rpcErrorOf(error);
    if (coded === null) throw error;
    return coded;
  }
  throw new Error("the call was not refused");
}

describe("the Workers RPC binding", () => {
  it("runs a task's life — enqueue, lease, heartbeat, complete — as the HTTP API does", async () => {
    const queue = uniqueQueue("rpc");
    const { tasks } = await edgeq().enqueue(queue, { payload: { n: 1 }, priority: 5 });
    expect(tasks).toMatchObject([{ id: expect.any(String), deduplicated: false }]);
    const id = tasks[0]!.id;
    const leased = await edgeq().lease(queue, { max: 10 });
    expect(leased.tasks).toHaveLength(1);
    const task = leased.tasks[0] as { id: string; lease_token: string; payload: unknown; priority: number };
    expect(task).toMatchObject({ id, payload: { n: 1 }, priority: 5, state: "processing" });
    const beat = await edgeq().heartbeat(id, { lease_token: task.lease_token, progress: 40, message: "half" });
    expect(beat).toMatchObject({ id, progress: 40, progress_message: "half" });
    const done = await edgeq().complete(id, { lease_token: task.lease_token, result: { ok: true } });
    expect(done).toEqual({ id, state: "completed", run_at: null, children: [], repeated: false });
    // The same task seen over HTTP.
    expect(await getTask(id)).toMatchObject({ state: "completed", result: { ok: true }, progress: 100 });
    expect(await edgeq().get(id)).toMatchObject({ id, state: "completed", result: { ok: true } });
    const stats = await edgeq().stats(queue);
    expect(stats.counts).toMatchObject({ completed: 1, pending: 0, processing: 0 });
  });

  it("acks in a batch and leases the next in the same call", async () => {
    const queue = uniqueQueue("rpc-ack");
    await edgeq().enqueue(queue, { tasks: [{ payload: 1 }, { payload: 2 }] });
    const first = (await edgeq().lease(queue, { max: 1 })).tasks[0] as { id: string; lease_token: string };
    const answer = await edgeq().ack(queue, {
      complete: [{ id: first.id, lease_token: first.lease_token }],
      lease: { max: 1 },
    });
    expect(answer.results).toEqual([{ id: first.id, ok: true, state: "completed", children: [], repeated: false }]);
    expect(answer.tasks).toHaveLength(1);
  });

  it("refuses bad arguments with the HTTP API's codes and field names, storing nothing", async () => {
    const queue = uniqueQueue("rpc-bad");
    expect(await refusal(edgeq().enqueue(queue, { tasks: [{ payload: 1 }, { priority: "high" }] }))).toEqual({
      code: "invalid_request",
      message: expect.stringContaining("tasks[1].priority"),
    });
    expect(await refusal(edgeq().enqueue("bad queue name!", { payload: 1 }))).toMatchObject({
      code: "invalid_request",
      message: expect.stringContaining("queue"),
    });
    expect(await refusal(edgeq().lease(queue, { max: 0 }))).toMatchObject({
      code: "invalid_request",
      message: expect.stringContaining("max"),
    });
    expect((await edgeq().list(queue)).tasks).toEqual([]);
  });

  it("answers a stale lease token and an unknown task with their codes", async () => {
    const queue = uniqueQueue("rpc-fence");
    const { tasks } = await edgeq().enqueue(queue, { payload: 1 });
    await edgeq().lease(queue, { max: 1 });
    expect(await refusal(edgeq().complete(tasks[0]!.id, { lease_token: "not-the-token" }))).toMatchObject({
      code: "lease_lost",
    });
    expect(await refusal(edgeq().get("01ARZ3NDEKTSV4RRFFQ69G5FAV"))).toMatchObject({ code: "not_found" });
  });
});
