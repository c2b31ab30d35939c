import { runDurableObjectAlarm } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { d1TaskStore } from "../../src/engine/d1-store";
import { db, PROCESSORS, uniqueQueue } from "../helpers";
import { call, complete, fail, type Leased } from "../http/api";
import { coordinator, setClock, untilAlarm, untilWaiting } from "../support/coordinator";

// Flow control's wake-ups (docs/flow-control.md, "Long polls and push"): a poll waiting on a key held at its
// limit is answered when a slot frees (an ack reported to the effects owner) or at the key's next token (the
// coordinator's alarm). Queues: the "flwake" prefix.

/** Gives up long before the poll's own wait ends (20 s): an answer within it came from a wake-up. */
const ANSWERED_WITHIN_MS = 8_000;

function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms)),
  ]);
}

describe("flow control wakes waiting polls", () => {
  it.each(["complete", "fail"] as const)(
    "a long poll on a key at its concurrency limit is answered when the running task's %s frees the slot",
    async (ack) => {
      const queue = uniqueQueue("flwake");
      await call("PUT", `/v1/queues/${queue}/config`, {
        body: { flow: { default: { concurrency: 1 } } },
      });
      await call("POST", `/v1/queues/${queue}/tasks`, { body: { tasks: [{ key: "k" }, { key: "k" }] } });
      const first = await call<Leased>("POST", `/v1/queues/${queue}/lease`, { body: { max: 10 } });
      expect(first.body.tasks).toHaveLength(1);
      const held = first.body.tasks[0]!;

      const poll = call<Leased>("POST", `/v1/queues/${queue}/lease`, { body: { max: 1, wait_s: 20 } });
      await untilWaiting(queue, 1);
      const acked =
        ack === "complete"
          ? await complete(held.id, held.lease_token)
          : await fail(held.id, { lease_token: held.lease_token, error: "again" });
      expect(acked.status).toBe(200);
      const answered = await within(poll, ANSWERED_WITHIN_MS, "the waiting poll");
      expect(answered.body.tasks).toHaveLength(1);
      expect(answered.body.tasks[0]!.key).toBe("k");
    },
  );

  it("a long poll on an ordered key held by its waiting retry is answered when that retry is cancelled", async () => {
    const queue = uniqueQueue("flwake");
    await call("PUT", `/v1/queues/${queue}/config`, { body: { flow: { default: { ordered: true } } } });
    await call("POST", `/v1/queues/${queue}/tasks`, { body: { tasks: [{ key: "k" }, { key: "k" }] } });
    const first = await call<Leased>("POST", `/v1/queues/${queue}/lease`, { body: { max: 10 } });
    expect(first.body.tasks).toHaveLength(1);
    const held = first.body.tasks[0]!;
    // Its retry waits 10 minutes and holds the key's order: nothing of the key is leasable meanwhile.
    const failed = await fail(held.id, { lease_token: held.lease_token, error: "later", retry_after_s: 600 });
    expect(failed.body).toMatchObject({ state: "pending" });

    const poll = call<Leased>("POST", `/v1/queues/${queue}/lease`, { body: { max: 1, wait_s: 20 } });
    await untilWaiting(queue, 1);
    const cancelled = await call("POST", `/v1/tasks/${held.id}/cancel`);
    expect(cancelled.body).toMatchObject({ state: "cancelled" });
    const answered = await within(poll, ANSWERED_WITHIN_MS, "the waiting poll");
    expect(answered.body.tasks).toHaveLength(1);
    expect(answered.body.tasks[0]!.key).toBe("k");
    expect(answered.body.tasks[0]!.id).not.toBe(held.id);
  });

  it.each([
    ["a queue cancel", (queue: string) => call("POST", `/v1/queues/${queue}/cancel`, { body: { group: "old" } })],
    [
      "a bulk cancel",
      (queue: string) =>
        call("POST", `/v1/queues/${queue}/bulk`, { body: { action: "cancel", filter: { group: "old" } } }),
    ],
  ] as const)(
    "a long poll on an ordered key held by its waiting retry is answered when %s ends that retry",
    async (_what, cancelOld) => {
      const queue = uniqueQueue("flwake");
      await call("PUT", `/v1/queues/${queue}/config`, { body: { flow: { default: { ordered: true } } } });
      await call("POST", `/v1/queues/${queue}/tasks`, {
        body: { tasks: [{ key: "k", group: "old" }, { key: "k" }] },
      });
      const first = await call<Leased>("POST", `/v1/queues/${queue}/lease`, { body: { max: 10 } });
      expect(first.body.tasks).toHaveLength(1);
      const held = first.body.tasks[0]!;
      const failed = await fail(held.id, { lease_token: held.lease_token, error: "later", retry_after_s: 600 });
      expect(failed.body).toMatchObject({ state: "pending" });

      const poll = call<Leased>("POST", `/v1/queues/${queue}/lease`, { body: { max: 1, wait_s: 20 } });
      await untilWaiting(queue, 1);
      const cancelled = await cancelOld(queue);
      expect(cancelled.status, cancelled.text).toBe(200);
      const answered = await within(poll, ANSWERED_WITHIN_MS, "the waiting poll");
      expect(answered.body.tasks).toHaveLength(1);
      expect(answered.body.tasks[0]!.key).toBe("k");
      expect(answered.body.tasks[0]!.id).not.toBe(held.id);
    },
  );

  it("a long poll on a rate-limited key is answered at its next token, by the coordinator's alarm", async () => {
    const queue = uniqueQueue("flwake");
    const store = d1TaskStore(db());
    // Per minute: the real clock cannot refill the bucket while the test runs; time is the coordinator's.
    const now = Date.now();
    await store.putQueueConfig(queue, { flow: { default: { rate: { count: 1, per: "minute" } } } }, now, PROCESSORS);
    await store.enqueueTasks(
      queue,
      [
        { payload: 1, key: "k" },
        { payload: 2, key: "k" },
      ],
      now,
    );
    await setClock(queue, now);
    const stub = coordinator(queue);
    // A lease visible well past the token time: its expiry is not what wakes the poll.
    const lease = { queue, max: 10, visibilityTimeoutS: 600, holder: "w" };
    expect(await stub.lease({ ...lease, waitMs: 0 })).toHaveLength(1);

    const poll = stub.lease({ ...lease, waitMs: 20_000 });
    await untilWaiting(queue, 1);
    await untilAlarm(queue, now + 60_000);
    await setClock(queue, now + 60_000);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    const answered = await within(poll, ANSWERED_WITHIN_MS, "the waiting poll");
    expect(answered.map((t) => JSON.parse(t.payload as string) as unknown)).toEqual([2]);
  });
});
