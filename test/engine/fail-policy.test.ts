import { expect, it } from "vitest";
import { MAX_ERROR_MESSAGE_CHARS } from "../../src/contracts/limits";
import { T0, uniqueQueue } from "../helpers";
import { storeFixtures } from "./conformance/fixtures";
import { CORE, describeStore } from "./conformance/store-kinds";

describeStore(
  "failTasks policy",
  (kind) => {
    const { store, enqueueOne, lease, leaseOne, row } = storeFixtures(kind);

    it("retryable:false makes the task dead at once, with a permanent error", async () => {
      const queue = uniqueQueue();
      const id = await enqueueOne(queue, { maxAttempts: 5 });
      const { leaseToken } = await leaseOne(queue, T0);
      const [outcome] = await store().failTasks([{ id, leaseToken, message: "bad input", retryable: false }], T0 + 10);
      expect(outcome).toMatchObject({ ok: true, state: "dead" });
      const stored = await row(id);
      expect(stored).toMatchObject({
        state: "dead",
        attempts: 1,
        finishedAt: T0 + 10,
        leaseToken: null,
        leaseExpiresAt: null,
      });
      expect(JSON.parse(stored.errors)).toEqual([{ attempt: 1, at: T0 + 10, message: "bad input", kind: "permanent" }]);
      expect(await lease(queue, T0 + 1_000_000)).toEqual([]);
    });

    it("retryAfterS sets run_at to exactly now + retryAfterS, overriding the backoff", async () => {
      const queue = uniqueQueue();
      const id = await enqueueOne(queue);
      const { leaseToken } = await leaseOne(queue, T0);
      const [outcome] = await store().failTasks([{ id, leaseToken, message: "429", retryAfterS: 2.5 }], T0 + 7);
      expect(outcome).toMatchObject({ ok: true, state: "pending", run_at: T0 + 7 + 2_500 });
      expect(await row(id)).toMatchObject({
        state: "pending",
        runAt: T0 + 7 + 2_500,
        finishedAt: null,
        leaseToken: null,
      });
      expect(await lease(queue, T0 + 7 + 2_499)).toEqual([]);
      expect((await lease(queue, T0 + 7 + 2_500)).map((t) => t.id)).toEqual([id]);
    });

    it("retryAfterS 0 makes the task due again at once", async () => {
      const queue = uniqueQueue();
      const id = await enqueueOne(queue);
      const { leaseToken } = await leaseOne(queue, T0);
      await store().failTasks([{ id, leaseToken, message: "now", retryAfterS: 0 }], T0 + 3);
      expect((await row(id)).runAt).toBe(T0 + 3);
    });

    it("appends one error per failure with its attempt number, oldest first, until dead", async () => {
      const queue = uniqueQueue();
      const id = await enqueueOne(queue, { maxAttempts: 3 });
      let now = T0;
      const states: string[] = [];
      for (let attempt = 1; attempt <= 3; attempt++) {
        const { leaseToken, attempts } = await leaseOne(queue, now);
        expect(attempts).toBe(attempt);
        const [outcome] = await store().failTasks(
          [{ id, leaseToken, message: `fail ${attempt}`, retryAfterS: 1 }],
          now + 5,
        );
        states.push(outcome!.ok ? outcome!.state : outcome!.error.code);
        const errors = JSON.parse((await row(id)).errors) as unknown[];
        expect(errors).toHaveLength(attempt);
        expect(errors.at(-1)).toEqual({ attempt, at: now + 5, message: `fail ${attempt}`, kind: "error" });
        now += 10_000;
      }
      expect(states).toEqual(["pending", "pending", "dead"]);
      expect(JSON.parse((await row(id)).errors).map((e: { attempt: number }) => e.attempt)).toEqual([1, 2, 3]);
    });

    it("truncates long error messages", async () => {
      const queue = uniqueQueue();
      const id = await enqueueOne(queue);
      const { leaseToken } = await leaseOne(queue, T0);
      await store().failTasks([{ id, leaseToken, message: "x".repeat(MAX_ERROR_MESSAGE_CHARS + 500) }], T0 + 1);
      const [entry] = JSON.parse((await row(id)).errors) as Array<{ message: string }>;
      expect(entry!.message).toHaveLength(MAX_ERROR_MESSAGE_CHARS);
    });
  },
  { needs: CORE },
);
