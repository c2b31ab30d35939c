import { expect, it } from "vitest";
import { T0, uniqueQueue } from "../helpers";
import { expectEdgeqError, storeFixtures } from "./conformance/fixtures";
import { CORE_AND_OPERATOR, describeStore } from "./conformance/store-kinds";

const MISSING_ID = "01KDZ00000000000000N0TH3RE";

describeStore(
  "cancelTask",
  (kind) => {
    const { store, enqueueOne, enqueueMany, lease, leaseOne, completedTask, deadTask, row, snapshot } =
      storeFixtures(kind);

    it("cancels a pending task at once", async () => {
      const queue = uniqueQueue();
      const id = await enqueueOne(queue);
      const cancelled = await store().cancelTask(id, T0 + 5);
      expect(cancelled).toMatchObject({ id, state: "cancelled", finishedAt: T0 + 5, updatedAt: T0 + 5 });
      expect(await row(id)).toMatchObject({ state: "cancelled", finishedAt: T0 + 5 });
      expect(await lease(queue, T0 + 10)).toEqual([]);
    });

    it("marks a processing task cancel-requested; the holder's heartbeat then gets task_cancelled", async () => {
      const queue = uniqueQueue();
      const id = await enqueueOne(queue);
      const { leaseToken } = await leaseOne(queue, T0);
      const requested = await store().cancelTask(id, T0 + 1);
      expect(requested).toMatchObject({ state: "processing", cancelRequested: 1, finishedAt: null, leaseToken });

      await expectEdgeqError(
        store().heartbeatTask({ id, leaseToken, extendS: 30, progress: 50 }, T0 + 2),
        "task_cancelled",
      );
      expect(await row(id)).toMatchObject({
        state: "cancelled",
        finishedAt: T0 + 2,
        leaseToken: null,
        leaseExpiresAt: null,
      });
      // The lease is over: a later ack is lease_lost.
      const [late] = await store().completeTasks([{ id, leaseToken }], T0 + 3);
      expect(late).toMatchObject({ ok: false, error: { code: "lease_lost" } });
    });

    it("ends a cancel-requested task cancelled when its holder completes, discarding the result", async () => {
      const queue = uniqueQueue();
      const id = await enqueueOne(queue);
      const { leaseToken } = await leaseOne(queue, T0);
      await store().cancelTask(id, T0 + 1);
      const [outcome] = await store().completeTasks([{ id, leaseToken, result: { done: true } }], T0 + 2);
      expect(outcome).toMatchObject({ id, ok: false, error: { code: "task_cancelled" } });
      expect(await row(id)).toMatchObject({ state: "cancelled", result: null, finishedAt: T0 + 2, leaseToken: null });
    });

    it("ends a cancel-requested task cancelled when its holder fails, even with attempts left", async () => {
      const queue = uniqueQueue();
      const id = await enqueueOne(queue, { maxAttempts: 5 });
      const { leaseToken } = await leaseOne(queue, T0);
      await store().cancelTask(id, T0 + 1);
      const [outcome] = await store().failTasks([{ id, leaseToken, message: "stopped" }], T0 + 2);
      expect(outcome).toMatchObject({ id, ok: false, error: { code: "task_cancelled" } });
      expect(await row(id)).toMatchObject({ state: "cancelled", finishedAt: T0 + 2, leaseToken: null });
    });

    it("refuses finished tasks and a second cancel while processing (invalid_transition), and unknown ids", async () => {
      const queue = uniqueQueue();
      const completed = await completedTask(queue);
      const dead = await deadTask(queue);
      const cancelled = await enqueueOne(queue);
      await store().cancelTask(cancelled, T0 + 1);
      const processing = await enqueueOne(queue);
      await leaseOne(queue, T0 + 2);
      await store().cancelTask(processing, T0 + 3);
      const before = await snapshot(queue);

      for (const id of [completed, dead, cancelled, processing]) {
        await expectEdgeqError(store().cancelTask(id, T0 + 10), "invalid_transition");
      }
      expect(await snapshot(queue)).toEqual(before);
      await expectEdgeqError(store().cancelTask(MISSING_ID, T0), "not_found");
    });

    it("a cancel racing its holder's completion: each task ends as its answers say, never both", async () => {
      const queue = uniqueQueue();
      await enqueueMany(
        queue,
        Array.from({ length: 8 }, () => ({})),
      );
      const leased = await lease(queue, T0, 8);
      expect(leased).toHaveLength(8);
      const raced = await Promise.all(
        leased.map((t) =>
          Promise.all([
            store()
              .cancelTask(t.id, T0 + 1)
              .then(
                () => "requested" as const,
                (e: { code?: string }) => e.code,
              ),
            store()
              .completeTasks([{ id: t.id, leaseToken: t.leaseToken! }], T0 + 1)
              .then(([o]) => (o!.ok ? "completed" : o!.error.code)),
          ]),
        ),
      );
      for (const [k, [cancel, complete]] of raced.entries()) {
        const { state } = await row(leased[k]!.id);
        // Cancel first: requested, and the completion ends it cancelled. Completion first: the cancel comes
        // too late for a finished task.
        if (state === "cancelled") expect([cancel, complete]).toEqual(["requested", "task_cancelled"]);
        else expect([state, cancel, complete]).toEqual(["completed", "invalid_transition", "completed"]);
      }
    });
  },
  { needs: CORE_AND_OPERATOR },
);

describeStore(
  "cancelQueueTasks",
  (kind) => {
    const { store, enqueueOne, enqueueMany, leaseOne, completedTask, row } = storeFixtures(kind);

    it("cancels only the given group's live tasks", async () => {
      const queue = uniqueQueue();
      const other = uniqueQueue();
      const [a1, a2, b1, none] = await enqueueMany(queue, [{ group: "a" }, { group: "a" }, { group: "b" }, {}]);
      const [a3] = await enqueueMany(queue, [{ group: "a", priority: 10 }]);
      expect((await leaseOne(queue, T0)).id).toBe(a3); // the highest priority
      const otherA = await enqueueOne(other, { group: "a" });
      const done = await completedTask(queue, { group: "a", priority: 20 });

      const result = await store().cancelQueueTasks(queue, { group: "a" }, T0 + 5);
      expect({ ...result, ids: result.ids.sort() }).toEqual({
        cancelled: 2,
        cancel_requested: 1,
        ids: [a1!, a2!].sort(),
        freesFlowKey: false,
      });
      expect(await row(a1!)).toMatchObject({ state: "cancelled", finishedAt: T0 + 5 });
      expect(await row(a2!)).toMatchObject({ state: "cancelled", finishedAt: T0 + 5 });
      expect(await row(a3!)).toMatchObject({ state: "processing", cancelRequested: 1 });
      expect(await row(b1!)).toMatchObject({ state: "pending", cancelRequested: 0 });
      expect(await row(none!)).toMatchObject({ state: "pending", cancelRequested: 0 });
      expect(await row(otherA)).toMatchObject({ state: "pending" });
      expect(await row(done)).toMatchObject({ state: "completed", finishedAt: T0 + 1 });

      // Again: nothing left to cancel in the group (the processing one was already asked).
      expect(await store().cancelQueueTasks(queue, { group: "a" }, T0 + 6)).toEqual({
        cancelled: 0,
        cancel_requested: 0,
        ids: [],
        freesFlowKey: false,
      });
      // Without a group: the rest of the queue.
      const rest = await store().cancelQueueTasks(queue, {}, T0 + 7);
      expect({ ...rest, ids: rest.ids.sort() }).toEqual({
        cancelled: 2,
        cancel_requested: 0,
        ids: [b1!, none!].sort(),
        freesFlowKey: false,
      });
      expect(await row(otherA)).toMatchObject({ state: "pending" });
    });
  },
  { needs: CORE_AND_OPERATOR },
);

describeStore(
  "retryTask",
  (kind) => {
    const { store, enqueueOne, leaseOne, completedTask, deadTask, row, snapshot } = storeFixtures(kind);

    it("revives a dead task: pending now, attempts reset, error history kept", async () => {
      const queue = uniqueQueue();
      const id = await deadTask(queue);
      const errorsBefore = (await row(id)).errors;
      const revived = await store().retryTask(id, T0 + 100);
      expect(revived).toMatchObject({ id, state: "pending", attempts: 0, runAt: T0 + 100, finishedAt: null });
      expect(await row(id)).toMatchObject({
        state: "pending",
        attempts: 0,
        runAt: T0 + 100,
        finishedAt: null,
        errors: errorsBefore,
      });
      expect(JSON.parse(errorsBefore)).toHaveLength(1);
      expect((await leaseOne(queue, T0 + 100)).attempts).toBe(1);
    });

    it("revives a cancelled task", async () => {
      const queue = uniqueQueue();
      const id = await enqueueOne(queue);
      await store().cancelTask(id, T0 + 1);
      expect(await store().retryTask(id, T0 + 2)).toMatchObject({
        state: "pending",
        cancelRequested: 0,
        runAt: T0 + 2,
      });
    });

    it("refuses live and completed tasks (invalid_transition) and unknown ids (not_found)", async () => {
      const queue = uniqueQueue();
      const completed = await completedTask(queue);
      const pending = await enqueueOne(queue, { runAt: T0 + 1_000_000 });
      const processing = await enqueueOne(queue);
      await leaseOne(queue, T0);
      const before = await snapshot(queue);
      for (const id of [completed, pending, processing]) {
        await expectEdgeqError(store().retryTask(id, T0 + 10), "invalid_transition");
      }
      expect(await snapshot(queue)).toEqual(before);
      await expectEdgeqError(store().retryTask(MISSING_ID, T0), "not_found");
    });

    it("is dedupe_conflict when a live task holds its dedupe key, and changes nothing", async () => {
      const queue = uniqueQueue();
      const dead = await deadTask(queue, { dedupeKey: "k" });
      const live = await enqueueOne(queue, { dedupeKey: "k" }, T0 + 2);
      expect(live).not.toBe(dead);
      const before = await snapshot(queue);
      await expectEdgeqError(store().retryTask(dead, T0 + 3), "dedupe_conflict");
      expect(await snapshot(queue)).toEqual(before);

      // Once the holder is gone, the retry goes through.
      await store().cancelTask(live, T0 + 4);
      expect(await store().retryTask(dead, T0 + 5)).toMatchObject({ state: "pending", dedupeKey: "k" });
    });
  },
  { needs: CORE_AND_OPERATOR },
);

describeStore(
  "redriveQueue",
  (kind) => {
    const { store, enqueueOne, completedTask, deadTask, row } = storeFixtures(kind);

    it("moves every dead task of the queue back to pending", async () => {
      const queue = uniqueQueue();
      const dead1 = await deadTask(queue);
      const dead2 = await deadTask(queue, {}, T0 + 10);
      const done = await completedTask(queue, {}, T0 + 20);
      const otherDead = await deadTask(uniqueQueue());

      const { redriven, ids } = await store().redriveQueue(queue, {}, T0 + 100);
      expect(redriven).toBe(2);
      expect(ids.sort()).toEqual([dead1, dead2].sort());
      for (const id of [dead1, dead2]) {
        expect(await row(id)).toMatchObject({ state: "pending", attempts: 0, runAt: T0 + 100, finishedAt: null });
      }
      expect((await row(done)).state).toBe("completed");
      expect((await row(otherDead)).state).toBe("dead");
      expect(await store().redriveQueue(queue, {}, T0 + 200)).toEqual({ redriven: 0, ids: [] });
    });

    it("can be scoped to a group", async () => {
      const queue = uniqueQueue();
      const inGroup = await deadTask(queue, { group: "g" });
      const outside = await deadTask(queue, { group: "h" }, T0 + 10);
      const { ids } = await store().redriveQueue(queue, { group: "g" }, T0 + 100);
      expect(ids).toEqual([inGroup]);
      expect((await row(inGroup)).state).toBe("pending");
      expect((await row(outside)).state).toBe("dead");
    });

    it("skips a task whose dedupe key a live task holds, and redrives the rest", async () => {
      const queue = uniqueQueue();
      const blocked = await deadTask(queue, { dedupeKey: "k" });
      const free = await deadTask(queue, { dedupeKey: "other" }, T0 + 10);
      const plain = await deadTask(queue, {}, T0 + 20);
      const holder = await enqueueOne(queue, { dedupeKey: "k" }, T0 + 30);
      const blockedBefore = await row(blocked);

      const { redriven, ids } = await store().redriveQueue(queue, {}, T0 + 100);
      expect(redriven).toBe(2);
      expect(ids.sort()).toEqual([free, plain].sort());
      expect(await row(blocked)).toEqual(blockedBefore);
      expect(await row(holder)).toMatchObject({ state: "pending", dedupeKey: "k" });
    });

    it("does not let a blocked task use up the limit: repeated calls reach the tasks behind it", async () => {
      const queue = uniqueQueue();
      const blocked = await deadTask(queue, { dedupeKey: "k" }); // the lowest id: picked first by id order
      const free = await deadTask(queue, {}, T0 + 10);
      await enqueueOne(queue, { dedupeKey: "k" }, T0 + 20);
      expect(await store().redriveQueue(queue, { limit: 1 }, T0 + 100)).toEqual({ redriven: 1, ids: [free] });
      expect(await store().redriveQueue(queue, { limit: 1 }, T0 + 100)).toEqual({ redriven: 0, ids: [] });
      expect((await row(blocked)).state).toBe("dead");
    });

    it("revives only one of two dead tasks sharing a dedupe key", async () => {
      const queue = uniqueQueue();
      const first = await deadTask(queue, { dedupeKey: "k" });
      const second = await deadTask(queue, { dedupeKey: "k" }, T0 + 10);
      const { ids } = await store().redriveQueue(queue, {}, T0 + 100);
      expect(ids).toHaveLength(1);
      const states = [(await row(first)).state, (await row(second)).state].sort();
      expect(states).toEqual(["dead", "pending"]);
    });

    it("redrives cancelled tasks when asked for state cancelled, and only those", async () => {
      const queue = uniqueQueue();
      const cancelled = await enqueueOne(queue);
      await store().cancelTask(cancelled, T0 + 1);
      const dead = await deadTask(queue, {}, T0 + 10);
      const { ids } = await store().redriveQueue(queue, { state: "cancelled" }, T0 + 100);
      expect(ids).toEqual([cancelled]);
      expect(await row(cancelled)).toMatchObject({ state: "pending", runAt: T0 + 100, finishedAt: null });
      expect((await row(dead)).state).toBe("dead");
    });

    it("honours limit", async () => {
      const queue = uniqueQueue();
      for (let i = 0; i < 3; i++) await deadTask(queue, {}, T0 + i * 10);
      expect((await store().redriveQueue(queue, { limit: 2 }, T0 + 100)).redriven).toBe(2);
      expect((await store().redriveQueue(queue, { limit: 2 }, T0 + 100)).redriven).toBe(1);
    });
  },
  { needs: CORE_AND_OPERATOR },
);
