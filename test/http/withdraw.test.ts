import { describe, expect, it } from "vitest";
import { MAX_WAITER_ID_CHARS } from "../../src/contracts/limits";
import { uniqueQueue } from "../helpers";
import { coordinator, untilWaiting } from "../support/coordinator";
import { call, enqueueOne, expectError, getTask, type Leased } from "./api";

// POST /v1/queues/{queue}/lease/withdraw: a client that stops withdraws the long poll it named with
// `waiter_id`; the poll answers at once with no tasks. Never an error for a name nobody has.

const withdraw = (queue: string, body: unknown) =>
  call<{ withdrawn: boolean }>("POST", `/v1/queues/${queue}/lease/withdraw`, { body });

describe("withdrawing a long poll over HTTP", () => {
  it("answers the named poll at once with no tasks; a task enqueued afterwards stays pending", async () => {
    const queue = uniqueQueue("http-wd");
    const polled = call<Leased>("POST", `/v1/queues/${queue}/lease`, {
      body: { max: 1, wait_s: 20, waiter_id: "worker-1-poll-7" },
    });
    await untilWaiting(queue, 1);
    const started = Date.now();
    const answer = await withdraw(queue, { waiter_id: "worker-1-poll-7" });
    expect(answer).toMatchObject({ status: 200, body: { withdrawn: true } });
    const poll = await polled;
    expect(poll).toMatchObject({ status: 200, body: { tasks: [] } });
    expect(Date.now() - started).toBeLessThan(5_000); // not the 20 s wait
    expect(await coordinator(queue).waiting()).toBe(0);

    const id = await enqueueOne(queue);
    expect((await getTask(id)).state).toBe("pending");
  });

  it("a poll answered just before its withdrawal arrived: the task it brought is released with 200, as the docs ask", async () => {
    const queue = uniqueQueue("http-wd-race");
    const polled = call<Leased>("POST", `/v1/queues/${queue}/lease`, {
      body: { max: 1, wait_s: 20, waiter_id: "stopping-poll" },
    });
    await untilWaiting(queue, 1);
    const id = await enqueueOne(queue);
    // The poll was answered with the task while the client, stopping, sent its withdrawal: the withdrawal
    // finds the hand-out unclaimed and takes it back (leasable at once; nobody else waits for it).
    const [task] = (await polled).body.tasks;
    expect(task).toMatchObject({ id });
    expect(await withdraw(queue, { waiter_id: "stopping-poll" })).toMatchObject({ body: { withdrawn: true } });
    // The client then releases what the answer brought: accepted, not 409 (issue 28, item 6).
    const released = await call("POST", `/v1/tasks/${id}/release`, { body: { lease_token: task!.lease_token } });
    expect(released.status).toBe(200);
    expect(await getTask(id)).toMatchObject({ state: "pending", attempts: 0 });
  });

  it("a name no poll has: 200 withdrawn false, and that poll, sent later, answers at once", async () => {
    const queue = uniqueQueue("http-wd-none");
    expect(await withdraw(queue, { waiter_id: "gone-before-it-came" })).toMatchObject({
      status: 200,
      body: { withdrawn: false },
    });
    const late = await call<Leased>("POST", `/v1/queues/${queue}/lease`, {
      body: { max: 1, wait_s: 20, waiter_id: "gone-before-it-came" },
    });
    expect(late).toMatchObject({ status: 200, body: { tasks: [] } });
    expect(await coordinator(queue).waiting()).toBe(0);
  });

  it("refuses a body without a name, or with one too long, with a 400 naming the field", async () => {
    const queue = uniqueQueue("http-wd-bad");
    expectError(await withdraw(queue, {}), 400, "invalid_request", /waiter_id/);
    expectError(
      await withdraw(queue, { waiter_id: "x".repeat(MAX_WAITER_ID_CHARS + 1) }),
      400,
      "invalid_request",
      /waiter_id/,
    );
    expectError(await withdraw(queue, { waiter_id: "a", extra: 1 }), 400, "invalid_request");
    expectError(
      await call("POST", `/v1/queues/${queue}/lease`, { body: { wait_s: 1, waiter_id: "" } }),
      400,
      "invalid_request",
      /waiter_id/,
    );
  });
});
