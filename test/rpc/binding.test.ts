import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { EdgeqError } from "../../src/contracts/errors";
import { edgeqRpc } from "../../src/rpc/edgeq-rpc";
import type { EdgeqService } from "../../src/rpc/edgeq-entrypoint";
import { getTask } from "../http/api";
import { uniqueQueue } from "../helpers";
import { coordinator, untilWaiting } from "../support/coordinator";

/** The Worker's own EdgeqRpc entrypoint through its loopback binding (a real RPC call, no HTTP), as a
 * caller wraps it. */
const edgeq = () => edgeqRpc(exports.EdgeqRpc as unknown as EdgeqService);

/** The code and message of a refused call. */
async function refusal(call: Promise<unknown>) {
  try {
    await call;
  } catch (error) {
    if (!(error instanceof EdgeqError)) throw error;
    return { code: error.code, message: error.message };
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
    // Each call below is refused by the compiler too (test/rpc/types.ts); a plain-JS caller reaches the schemas.
    // @ts-expect-error priority is a number
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

  it("withdraws a long poll by its waiter_id: the poll answers at once with nothing; an unknown name is a no-op", async () => {
    const queue = uniqueQueue("rpc-wd");
    const polled = edgeq().lease(queue, { max: 1, wait_s: 20, waiter_id: "rpc-poll-1" });
    await untilWaiting(queue, 1);
    const started = Date.now();
    expect(await edgeq().withdraw(queue, { waiter_id: "rpc-poll-1" })).toEqual({ withdrawn: true });
    expect((await polled).tasks).toEqual([]);
    expect(Date.now() - started).toBeLessThan(5_000); // not the 20 s wait
    expect(await coordinator(queue).waiting()).toBe(0);
    // A task enqueued now is nobody's: the withdrawn poll took nothing.
    const { tasks } = await edgeq().enqueue(queue, { payload: 1 });
    expect(await edgeq().get(tasks[0]!.id)).toMatchObject({ state: "pending", attempts: 0 });

    expect(await edgeq().withdraw(queue, { waiter_id: "no-such-poll" })).toEqual({ withdrawn: false });
    // @ts-expect-error waiter_id is required
    expect(await refusal(edgeq().withdraw(queue, {}))).toMatchObject({
      code: "invalid_request",
      message: expect.stringContaining("waiter_id"),
    });
  });

  it("creates, reads, pauses, triggers and deletes a schedule, as the schedules API does", async () => {
    const queue = uniqueQueue("rpc-sched");
    const name = uniqueQueue("rpc-nightly");
    const saved = await edgeq().putSchedule(name, { queue, cron: "0 3 * * *", task: { payload: { report: 1 } } });
    expect(saved).toMatchObject({ name, queue, cron: "0 3 * * *", paused: false, task: { payload: { report: 1 } } });
    expect(saved.next_runs).toHaveLength(5);
    expect(await edgeq().getSchedule(name)).toMatchObject({ name, next_run_at: saved.next_run_at });
    expect((await edgeq().listSchedules()).schedules.map((s) => s.name)).toContain(name);
    expect(await edgeq().pauseSchedule(name)).toMatchObject({ name, paused: true });
    expect(await edgeq().pauseSchedule(name, false)).toMatchObject({ name, paused: false });

    const fired = await edgeq().triggerSchedule(name);
    expect(fired).toMatchObject({ name, task: { id: expect.any(String), deduplicated: false } });
    expect(await edgeq().get(fired.task.id)).toMatchObject({ queue, state: "pending", payload: { report: 1 } });

    expect(await edgeq().deleteSchedule(name)).toEqual({ deleted: name });
    expect(await refusal(edgeq().getSchedule(name))).toMatchObject({ code: "not_found" });
    // The task it enqueued stays.
    expect(await edgeq().get(fired.task.id)).toMatchObject({ state: "pending" });
  });

  it("refuses a bad schedule with the field named, saving nothing", async () => {
    const name = uniqueQueue("rpc-bad-sched");
    expect(await refusal(edgeq().putSchedule(name, { queue: "q", cron: "not a cron" }))).toMatchObject({
      code: "invalid_request",
      message: expect.stringContaining("cron"),
    });
    // @ts-expect-error no such field
    expect(await refusal(edgeq().putSchedule(name, { queue: "q", cron: "* * * * *", extra: 1 }))).toMatchObject({
      code: "invalid_request",
    });
    // No date matches 30 February: it would never fire.
    expect(await refusal(edgeq().putSchedule(name, { queue: "q", cron: "0 0 30 2 *" }))).toMatchObject({
      code: "invalid_request",
      message: expect.stringMatching(/^cron: .*never fire/),
    });
    expect(await refusal(edgeq().pauseSchedule(name, "yes" as unknown as boolean))).toMatchObject({
      code: "invalid_request",
      message: expect.stringContaining("paused"),
    });
    expect(await refusal(edgeq().getSchedule(name))).toMatchObject({ code: "not_found" });
  });
});
