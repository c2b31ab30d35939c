import { expect, it } from "vitest";
import { TASK_STATES } from "../../src/contracts/states";
import { T0, uniqueQueue, PROCESSORS } from "../helpers";
import { storeFixtures, type StoreFixtures } from "./conformance/fixtures";
import { CORE_AND_OPERATOR, describeStore } from "./conformance/store-kinds";

/** One task in every state, plus extra pending ones (due and not yet due), in `queue`. */
async function populate(
  { store, completedTask, deadTask, enqueueOne, enqueueMany, leaseOne }: StoreFixtures,
  queue: string,
  group?: string,
): Promise<void> {
  await completedTask(queue, { group }, T0);
  await deadTask(queue, { group }, T0 + 10);
  const cancelled = await enqueueOne(queue, { group }, T0 + 20);
  await store().cancelTask(cancelled, T0 + 21);
  const processing = await enqueueOne(queue, { group }, T0 + 30);
  expect((await leaseOne(queue, T0 + 30)).id).toBe(processing);
  await enqueueMany(
    queue,
    [
      { group, runAt: T0 + 50 },
      { group, runAt: T0 + 40 },
      { group, runAt: T0 + 60_000 },
    ],
    T0 + 40,
  );
}

describeStore(
  "queueStats",
  (kind) => {
    const fixtures = storeFixtures(kind);
    const { store, enqueueMany, deadTask } = fixtures;

    it("counts every state and the due pending work", async () => {
      const queue = uniqueQueue();
      await populate(fixtures, queue);
      const stats = await store().queueStats(queue, {}, T0 + 1_000);
      expect(Object.keys(stats.counts).sort()).toEqual([...TASK_STATES].sort());
      expect(stats).toEqual({
        queue,
        counts: { pending: 3, waiting: 0, processing: 1, completed: 1, dead: 1, cancelled: 1, expired: 0 },
        due: 2,
        oldest_due_at: T0 + 40,
      });
      // Once the delayed task is due, it counts; oldest_due_at stays the oldest.
      expect(await store().queueStats(queue, {}, T0 + 60_000)).toMatchObject({ due: 3, oldest_due_at: T0 + 40 });
      // Before any is due.
      expect(await store().queueStats(queue, {}, T0 + 39)).toMatchObject({ due: 0, oldest_due_at: null });
    });

    it("reports every state as zero for an unknown queue", async () => {
      const stats = await store().queueStats(uniqueQueue(), {}, T0);
      expect(stats.counts).toEqual({
        pending: 0,
        waiting: 0,
        processing: 0,
        completed: 0,
        dead: 0,
        cancelled: 0,
        expired: 0,
      });
      expect(stats).toMatchObject({ due: 0, oldest_due_at: null });
    });

    it("can be scoped to a group", async () => {
      const queue = uniqueQueue();
      await deadTask(queue, { group: "h" }, T0);
      await enqueueMany(queue, [
        { group: "g", runAt: T0 + 5 },
        { group: "g", runAt: T0 + 6 },
        { group: "h", runAt: T0 + 1 },
      ]);
      expect(await store().queueStats(queue, { group: "g" }, T0 + 100)).toEqual({
        queue,
        counts: { pending: 2, waiting: 0, processing: 0, completed: 0, dead: 0, cancelled: 0, expired: 0 },
        due: 2,
        oldest_due_at: T0 + 5,
      });
      expect(await store().queueStats(queue, { group: "h" }, T0 + 100)).toMatchObject({
        counts: { pending: 1, dead: 1 },
        due: 1,
        oldest_due_at: T0 + 1,
      });
      expect((await store().queueStats(queue, {}, T0 + 100)).counts.pending).toBe(3);
    });
  },
  { needs: CORE_AND_OPERATOR },
);

describeStore(
  "listQueues",
  (kind) => {
    const fixtures = storeFixtures(kind);
    const { store } = fixtures;

    it("includes queues with tasks and configured queues without tasks", async () => {
      const withTasks = uniqueQueue("a");
      const configuredOnly = uniqueQueue("b");
      await populate(fixtures, withTasks);
      await store().putQueueConfig(configuredOnly, { max_attempts: 4 }, T0, PROCESSORS);
      const all = await store().listQueues();
      const names = all.map((q) => q.queue);
      expect(names).toEqual([...names].sort((x, y) => x.localeCompare(y)));
      expect(all.find((q) => q.queue === withTasks)?.counts).toEqual({
        pending: 3,
        waiting: 0,
        processing: 1,
        completed: 1,
        dead: 1,
        cancelled: 1,
        expired: 0,
      });
      expect(all.find((q) => q.queue === configuredOnly)?.counts).toEqual({
        pending: 0,
        waiting: 0,
        processing: 0,
        completed: 0,
        dead: 0,
        cancelled: 0,
        expired: 0,
      });
    });
  },
  { needs: ["core", "operator", "queueConfig", "reads"] },
);

describeStore(
  "listTasks",
  (kind) => {
    const { store, enqueueOne, enqueueMany } = storeFixtures(kind);

    it("visits every task exactly once, in id order, page by page", async () => {
      const queue = uniqueQueue();
      const ids = await enqueueMany(
        queue,
        Array.from({ length: 23 }, (_, i) => ({ priority: i % 3 })),
      );
      await enqueueOne(uniqueQueue()); // another queue's task is never listed
      const seen: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      for (;;) {
        const page = await store().listTasks(queue, { limit: 5, cursor });
        pages += 1;
        expect(page.tasks.length).toBeLessThanOrEqual(5);
        seen.push(...page.tasks.map((t) => t.id));
        if (page.next_cursor === null) break;
        expect(page.next_cursor).toBe(page.tasks.at(-1)!.id);
        cursor = page.next_cursor;
      }
      expect(pages).toBe(5);
      expect(seen).toEqual(ids);
      expect(seen).toEqual([...seen].sort());
    });

    it("gives no cursor when the last page is exactly full", async () => {
      const queue = uniqueQueue();
      await enqueueMany(queue, [{}, {}, {}, {}]);
      const first = await store().listTasks(queue, { limit: 2 });
      const second = await store().listTasks(queue, { limit: 2, cursor: first.next_cursor! });
      expect(second.tasks).toHaveLength(2);
      expect(second.next_cursor).toBeNull();
    });

    it("filters by state, group and type, and pages within the filter", async () => {
      const queue = uniqueQueue();
      const [g1, g2, h1, typed] = await enqueueMany(queue, [
        { group: "g" },
        { group: "g" },
        { group: "h" },
        { type: "render", group: "g" },
      ]);
      await store().cancelTask(g2!, T0 + 1);

      const pendingG = await store().listTasks(queue, { state: "pending", group: "g", limit: 10 });
      expect(pendingG.tasks.map((t) => t.id)).toEqual([g1, typed]);
      expect((await store().listTasks(queue, { state: "cancelled", limit: 10 })).tasks.map((t) => t.id)).toEqual([g2]);
      expect((await store().listTasks(queue, { group: "h", limit: 10 })).tasks.map((t) => t.id)).toEqual([h1]);
      expect((await store().listTasks(queue, { type: "render", limit: 10 })).tasks.map((t) => t.id)).toEqual([typed]);
      expect(
        (await store().listTasks(queue, { type: "default", group: "g", limit: 10 })).tasks.map((t) => t.id),
      ).toEqual([g1, g2]);

      const page1 = await store().listTasks(queue, { group: "g", limit: 2 });
      expect(page1.tasks.map((t) => t.id)).toEqual([g1, g2]);
      const page2 = await store().listTasks(queue, { group: "g", limit: 2, cursor: page1.next_cursor! });
      expect(page2).toEqual({ tasks: [expect.objectContaining({ id: typed })], next_cursor: null });
    });
  },
  { needs: CORE_AND_OPERATOR },
);
