import { decodeTime } from "ulid";
import { expect, it } from "vitest";
import { MAX_ENQUEUE_TASKS, MAX_PAYLOAD_BYTES } from "../../src/contracts/limits";
import { DEFAULT_QUEUE_CONFIG } from "../../src/engine/queue-config";
import { T0, uniqueQueue, PROCESSORS } from "../helpers";
import { expectEdgeqError, storeFixtures } from "./conformance/fixtures";
import { CORE, CORE_AND_CONFIG, describeStore, itNeeds, OPERATOR } from "./conformance/store-kinds";

describeStore(
  "enqueueTasks: volume and atomicity",
  (kind) => {
    const { store, countTasks, row } = storeFixtures(kind);

    it("stores 10,000 tasks from one call, results in input order with unique ascending ids", async () => {
      const queue = uniqueQueue();
      // ~1.5 MB of rows: more than one MAX_ENQUEUE_CHUNK_BYTES statement inside the batch.
      const input = Array.from({ length: MAX_ENQUEUE_TASKS }, (_, i) => ({ payload: { i, pad: "x".repeat(80) } }));
      const { tasks, earliestRunAt } = await store().enqueueTasks(queue, input, T0);

      expect(tasks).toHaveLength(10_000);
      expect(await countTasks(queue)).toBe(10_000);
      expect(earliestRunAt).toBe(T0);
      expect(tasks.every((t) => t.state === "pending" && !t.deduplicated)).toBe(true);
      const ids = tasks.map((t) => t.id);
      expect(new Set(ids).size).toBe(10_000);
      for (let i = 1; i < ids.length; i++) expect(ids[i]! > ids[i - 1]!).toBe(true);

      // Input order: result i is the task with payload i.
      const stored = await store().listTasks(queue, { limit: MAX_ENQUEUE_TASKS });
      expect(stored.tasks).toHaveLength(10_000);
      const indexById = new Map(stored.tasks.map((t) => [t.id, (JSON.parse(t.payload) as { i: number }).i]));
      expect(ids.every((id, i) => indexById.get(id) === i)).toBe(true);
    });

    it("rejects a call with one oversized payload and inserts nothing", async () => {
      const queue = uniqueQueue();
      const atLimit = "a".repeat(MAX_PAYLOAD_BYTES - 2); // JSON adds the two quotes: exactly the limit
      const tooBig = "a".repeat(MAX_PAYLOAD_BYTES - 1);
      const error = await expectEdgeqError(
        store().enqueueTasks(queue, [{ payload: 1 }, { payload: atLimit }, { payload: tooBig }, { payload: 4 }], T0),
        "payload_too_large",
      );
      expect(error.message).toContain("tasks[2]");
      expect(await countTasks(queue)).toBe(0);

      // The limit itself is allowed.
      const { tasks } = await store().enqueueTasks(queue, [{ payload: atLimit }], T0);
      expect(JSON.parse((await row(tasks[0]!.id)).payload)).toHaveLength(MAX_PAYLOAD_BYTES - 2);
    });

    it("counts payload bytes as UTF-8, not characters", async () => {
      const queue = uniqueQueue();
      // "é" is 2 bytes in UTF-8: half the limit in characters is already over it in bytes.
      await expectEdgeqError(
        store().enqueueTasks(queue, [{ payload: "é".repeat(MAX_PAYLOAD_BYTES / 2) }], T0),
        "payload_too_large",
      );
      expect(await countTasks(queue)).toBe(0);
    });

    it("rejects more than MAX_ENQUEUE_TASKS tasks and inserts nothing", async () => {
      const queue = uniqueQueue();
      const input = Array.from({ length: MAX_ENQUEUE_TASKS + 1 }, () => ({}));
      await expectEdgeqError(store().enqueueTasks(queue, input, T0), "payload_too_large");
      expect(await countTasks(queue)).toBe(0);
    });
  },
  { needs: CORE },
);

describeStore(
  "enqueueTasks: client-supplied ids",
  (kind) => {
    const { store, countTasks, leaseOne, row, snapshot } = storeFixtures(kind);

    it("re-enqueueing an existing id is a no-op returning the existing task", async () => {
      const queue = uniqueQueue();
      const id = "01KDVDNA0000000000000CL1NT";
      const first = await store().enqueueTasks(queue, [{ id, payload: { v: 1 }, priority: 5 }], T0);
      expect(first.tasks).toEqual([{ id, state: "pending", deduplicated: false }]);
      const before = await snapshot(queue);

      const again = await store().enqueueTasks(queue, [{ id, payload: { v: 2 }, priority: 9 }], T0 + 1000);
      expect(again.tasks).toEqual([{ id, state: "pending", deduplicated: true }]);
      expect(again.earliestRunAt).toBeNull();
      expect(await snapshot(queue)).toEqual(before);
      expect(await row(id)).toMatchObject({ payload: '{"v":1}', priority: 5 });
    });

    it("reports the existing task's current state", async () => {
      const queue = uniqueQueue();
      const id = "01KDVDNA0000000000000CL1N2";
      await store().enqueueTasks(queue, [{ id }], T0);
      await leaseOne(queue, T0);
      const again = await store().enqueueTasks(queue, [{ id }], T0 + 1);
      expect(again.tasks).toEqual([{ id, state: "processing", deduplicated: true }]);
      expect(await countTasks(queue)).toBe(1);
    });

    it("rejects an id whose ULID time is ahead of the clock, inserting nothing", async () => {
      const queue = uniqueQueue();
      const future = "01KDZ0000000000000000CL1NT"; // 2026-01-02T09:18Z, a day after T0
      await expect(store().enqueueTasks(queue, [{}, { id: future }], T0)).rejects.toMatchObject({
        code: "invalid_request",
        message: expect.stringMatching(/^tasks\[1\]\.id: its ULID time is in the future/),
      });
      expect(await countTasks(queue)).toBe(0);
      // Within five minutes of skew it is accepted.
      const soon = await store().enqueueTasks(queue, [{ id: future }], decodeTime(future) - 4 * 60 * 1000);
      expect(soon.tasks[0]).toMatchObject({ id: future, deduplicated: false });
    });

    it("inserts a repeated id within one call once", async () => {
      const queue = uniqueQueue();
      const id = "01KDVDNA0000000000000CL1N3";
      const { tasks } = await store().enqueueTasks(
        queue,
        [
          { id, payload: "a" },
          { id, payload: "b" },
        ],
        T0,
      );
      expect(tasks).toEqual([
        { id, state: "pending", deduplicated: false },
        { id, state: "pending", deduplicated: true },
      ]);
      expect(await row(id)).toMatchObject({ payload: '"a"' });
    });
  },
  { needs: CORE },
);

describeStore(
  "enqueueTasks: dedupe keys",
  (kind) => {
    const { store, countTasks, enqueueOne, leaseOne, completedTask, deadTask, row } = storeFixtures(kind);

    it("returns the live task holding the key instead of creating one", async () => {
      const queue = uniqueQueue();
      const first = await store().enqueueTasks(queue, [{ dedupeKey: "k", payload: 1 }], T0);
      const second = await store().enqueueTasks(queue, [{ dedupeKey: "k", payload: 2 }], T0 + 1);
      expect(second.tasks).toEqual([{ id: first.tasks[0]!.id, state: "pending", deduplicated: true }]);
      expect(second.earliestRunAt).toBeNull();
      expect(await countTasks(queue)).toBe(1);
      expect(await row(first.tasks[0]!.id)).toMatchObject({ payload: "1" });
    });

    it("dedupes a key repeated inside one call to its first task", async () => {
      const queue = uniqueQueue();
      const { tasks } = await store().enqueueTasks(
        queue,
        [{ dedupeKey: "k", payload: 1 }, { dedupeKey: "other" }, { dedupeKey: "k", payload: 3 }],
        T0,
      );
      expect(tasks.map((t) => t.deduplicated)).toEqual([false, false, true]);
      expect(tasks[2]!.id).toBe(tasks[0]!.id);
      expect(await countTasks(queue)).toBe(2);
      expect(await row(tasks[0]!.id)).toMatchObject({ payload: "1", dedupeKey: "k" });
    });

    it("scopes keys to their queue", async () => {
      const a = uniqueQueue();
      const b = uniqueQueue();
      const inA = await enqueueOne(a, { dedupeKey: "shared" });
      const { tasks } = await store().enqueueTasks(b, [{ dedupeKey: "shared" }], T0);
      expect(tasks[0]).toMatchObject({ state: "pending", deduplicated: false });
      expect(tasks[0]!.id).not.toBe(inA);
      expect(await row(tasks[0]!.id)).toMatchObject({ queue: b, dedupeKey: "shared" });
    });

    it("holds the key while processing, and frees it once the holder completes", async () => {
      const queue = uniqueQueue();
      const holder = await enqueueOne(queue, { dedupeKey: "k" });
      const leased = await leaseOne(queue, T0);
      const whileProcessing = await store().enqueueTasks(queue, [{ dedupeKey: "k" }], T0 + 1);
      expect(whileProcessing.tasks).toEqual([{ id: holder, state: "processing", deduplicated: true }]);

      await store().completeTasks([{ id: leased.id, leaseToken: leased.leaseToken }], T0 + 2);
      const after = await store().enqueueTasks(queue, [{ dedupeKey: "k" }], T0 + 3);
      expect(after.tasks[0]).toMatchObject({ state: "pending", deduplicated: false });
      expect(after.tasks[0]!.id).not.toBe(holder);
      expect(await countTasks(queue)).toBe(2);
    });

    itNeeds(kind, OPERATOR)("frees the key when the holder is completed, dead or cancelled", async () => {
      const queue = uniqueQueue();
      const completed = await completedTask(queue, { dedupeKey: "c" });
      const dead = await deadTask(queue, { dedupeKey: "d" });
      const cancelled = await enqueueOne(queue, { dedupeKey: "x" });
      await store().cancelTask(cancelled, T0 + 1);

      const { tasks } = await store().enqueueTasks(
        queue,
        [{ dedupeKey: "c" }, { dedupeKey: "d" }, { dedupeKey: "x" }],
        T0 + 2,
      );
      expect(tasks.map((t) => t.deduplicated)).toEqual([false, false, false]);
      expect(tasks.map((t) => t.id)).not.toContain(completed);
      expect(tasks.map((t) => t.id)).not.toContain(dead);
      expect(tasks.map((t) => t.id)).not.toContain(cancelled);
      expect(await countTasks(queue)).toBe(6);
    });
  },
  { needs: CORE },
);

describeStore(
  "enqueueTasks: run time and attempts",
  (kind) => {
    const { store, enqueueOne, row } = storeFixtures(kind);

    it("does not lease a delayed task before its runAt", async () => {
      const queue = uniqueQueue();
      const { tasks, earliestRunAt } = await store().enqueueTasks(
        queue,
        [{ runAt: T0 + 60_000 }, { runAt: T0 + 5_000 }],
        T0,
      );
      expect(earliestRunAt).toBe(T0 + 5_000);
      expect(await row(tasks[0]!.id)).toMatchObject({ runAt: T0 + 60_000, state: "pending" });
      // A one-hour lease, so the first task's lease does not lapse within the test's minute.
      const leaseHour = (now: number) =>
        store().leaseTasks({ queue, max: 100, visibilityTimeoutS: 3600, holder: null }, now);
      expect(await leaseHour(T0 + 4_999)).toEqual([]);
      expect((await leaseHour(T0 + 5_000)).map((t) => t.id)).toEqual([tasks[1]!.id]);
      expect(await leaseHour(T0 + 59_999)).toEqual([]);
      expect((await leaseHour(T0 + 60_000)).map((t) => t.id)).toEqual([tasks[0]!.id]);
    });

    it("takes max_attempts from the queue config unless the task overrides it", async () => {
      const configured = uniqueQueue();
      const unconfigured = uniqueQueue();
      await store().putQueueConfig(configured, { max_attempts: 7 }, T0, PROCESSORS);
      const [byConfig, byTask] = (await store().enqueueTasks(configured, [{}, { maxAttempts: 2 }], T0)).tasks;
      const byDefault = await enqueueOne(unconfigured);
      expect((await row(byConfig!.id)).maxAttempts).toBe(7);
      expect((await row(byTask!.id)).maxAttempts).toBe(2);
      expect((await row(byDefault)).maxAttempts).toBe(DEFAULT_QUEUE_CONFIG.max_attempts);
    });

    it("stores type, priority, group and payload as given, with defaults for the rest", async () => {
      const queue = uniqueQueue();
      const [full, bare] = (
        await store().enqueueTasks(
          queue,
          [{ type: "render", priority: -3, group: "g1", payload: { a: [1, "b"] } }, {}],
          T0,
        )
      ).tasks;
      expect(await row(full!.id)).toMatchObject({
        queue,
        type: "render",
        priority: -3,
        groupKey: "g1",
        payload: '{"a":[1,"b"]}',
        state: "pending",
        attempts: 0,
        runAt: T0,
        createdAt: T0,
        updatedAt: T0,
        errors: "[]",
        finishedAt: null,
        startedAt: null,
      });
      expect(await row(bare!.id)).toMatchObject({ type: "default", priority: 0, groupKey: null, payload: "null" });
    });
  },
  { needs: CORE_AND_CONFIG },
);
