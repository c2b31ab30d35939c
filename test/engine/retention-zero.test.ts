import { expect, it } from "vitest";
import { T0, uniqueQueue, PROCESSORS } from "../helpers";
import { expectEdgeqError, storeFixtures } from "./conformance/fixtures";
import { describeStore } from "./conformance/store-kinds";
import { QueueConfigSchema } from "../../src/contracts/api";

const DAY_MS = 86_400_000;
/** The time of the tests that run the retention prune: before every clock range (test/support/clock-range.ts)
 * and every other file's tasks, so the prune (which walks the whole table) deletes nothing but theirs. */
const EARLY = Date.parse("1970-03-01T00:00:00.000Z");

/**
 * A queue of `retention_s: 0` keeps no completed task: the completion makes it a tombstone, gone for every client
 * (src/engine/complete-tombstone.ts; test/engine/d1/tombstones.test.ts)
 * — unless something still needs it (children, dependents, a requested cancel) — and keeps every other
 * finished task (dead, cancelled) for the default retention.
 */
describeStore("retention_s 0: a completion keeps nothing", (kind) => {
  const { store, enqueueOne, leaseOne, completedTask, deadTask } = storeFixtures(kind);
  const exists = async (id: string) => (await store().findTaskState(id)) !== null;

  async function zeroQueue(prefix: string): Promise<string> {
    const queue = uniqueQueue(prefix);
    await store().putQueueConfig(queue, { retention_s: 0 }, T0, PROCESSORS);
    return queue;
  }

  /** Prunes until nothing more goes (the walk may take more than one window). */
  async function pruneAt(now: number): Promise<void> {
    for (let i = 0; i < 20; i++) if ((await store().pruneByRetention(now)).pruned === 0) return;
  }

  it("deletes the task with its completion: answered completed, then not found", async () => {
    const queue = await zeroQueue("r0-gone");
    const id = await enqueueOne(queue);
    const leased = await leaseOne(queue, T0);
    const [outcome] = await store().completeTasks([{ id, leaseToken: leased.leaseToken, result: { big: 1 } }], T0 + 1);
    expect(outcome).toMatchObject({ ok: true, state: "completed", queue, repeated: false });
    expect(await exists(id)).toBe(false);
    await expectEdgeqError(store().getTask(id), "not_found");
  });

  it("a repeated complete (its answer lost) is not_found, not lease_lost; a stale holder's too", async () => {
    const queue = await zeroQueue("r0-repeat");
    const id = await enqueueOne(queue);
    const leased = await leaseOne(queue, T0);
    const item = { id, leaseToken: leased.leaseToken };
    expect((await store().completeTasks([item], T0 + 1))[0]).toMatchObject({ ok: true });
    const [again] = await store().completeTasks([item], T0 + 2);
    expect(again).toMatchObject({ ok: false });
    expect(again!.ok === false && again!.error.code).toBe("not_found");
    const [failAfter] = await store().failTasks([{ ...item, message: "late", retryable: true }], T0 + 3);
    expect(failAfter!.ok === false && failAfter!.error.code).toBe("not_found");
  });

  it("deletes nothing for a wrong, swapped or expired token: lease_lost, the task kept", async () => {
    const queue = await zeroQueue("r0-fence");
    const [a, b] = [await enqueueOne(queue, {}, T0), await enqueueOne(queue, {}, T0 + 1)];
    const leased = await store().leaseTasks({ queue, max: 2, visibilityTimeoutS: 30, holder: "w" }, T0 + 2);
    const token = (id: string) => leased.find((t) => t.id === id)!.leaseToken!;
    const swapped = await store().completeTasks(
      [
        { id: a!, leaseToken: token(b!) },
        { id: b!, leaseToken: "not-a-token" },
      ],
      T0 + 3,
    );
    expect(swapped.map((o) => !o.ok && o.error.code)).toEqual(["lease_lost", "lease_lost"]);
    const [late] = await store().completeTasks([{ id: a!, leaseToken: token(a!) }], T0 + 2 + 30_000);
    expect(!late!.ok && late!.error.code).toBe("lease_lost");
    expect(await store().findTaskState(a!)).toBe("processing");
    expect(await store().findTaskState(b!)).toBe("processing");
  });

  it("keeps dead and cancelled tasks for the default retention, then prunes them", async () => {
    const queue = await zeroQueue("r0-dead");
    const dead = await deadTask(queue, {}, EARLY);
    const cancelled = await enqueueOne(queue, {}, EARLY + 5);
    await store().cancelTask(cancelled, EARLY + 6);
    await pruneAt(EARLY + DAY_MS);
    expect(await exists(dead)).toBe(true);
    expect(await exists(cancelled)).toBe(true);
    await pruneAt(EARLY + 8 * DAY_MS);
    expect(await exists(dead)).toBe(false);
    expect(await exists(cancelled)).toBe(false);
  });

  it("a task whose cancel was requested while running ends cancelled and is kept", async () => {
    const queue = await zeroQueue("r0-cancel");
    const id = await enqueueOne(queue);
    const leased = await leaseOne(queue, T0);
    await store().cancelTask(id, T0 + 1);
    const [outcome] = await store().completeTasks([{ id, leaseToken: leased.leaseToken }], T0 + 2);
    expect(outcome!.ok === false && outcome!.error.code).toBe("task_cancelled");
    expect(await store().findTaskState(id)).toBe("cancelled");
  });

  it("a parent with `then` is kept for its children's insert (they get its result), and pruned at the next tick", async () => {
    const queue = await zeroQueue("r0-then");
    const parent = await enqueueOne(queue, { type: "parent", then: [{ type: "child" }] }, EARLY);
    const leased = await leaseOne(queue, EARLY);
    const [outcome] = await store().completeTasks(
      [{ id: parent, leaseToken: leased.leaseToken, result: { n: 7 } }],
      EARLY + 1,
    );
    expect(outcome).toMatchObject({ ok: true, state: "completed" });
    const children = outcome!.ok ? outcome!.children : [];
    expect(children).toHaveLength(1);
    const child = await store().getTask(children[0]!.id);
    expect(JSON.parse(child.payload as string)).toMatchObject({ parent: { id: parent, result: { n: 7 } } });
    expect(await store().findTaskState(parent)).toBe("completed");
    await pruneAt(EARLY + 60_000);
    expect(await exists(parent)).toBe(false);
    // The child, a plain task of the same queue, goes with its own completion.
    const c = await leaseOne(queue, EARLY + 60_000);
    await store().completeTasks([{ id: c.id, leaseToken: c.leaseToken }], EARLY + 60_001);
    expect(await exists(c.id)).toBe(false);
  });

  it("a dependency with a waiting dependent is kept until the completion released it, and the dependent runs", async () => {
    const queue = await zeroQueue("r0-deps");
    const a = await enqueueOne(queue, { priority: 5 }, EARLY);
    const b = await enqueueOne(queue, { priority: 4 }, EARLY);
    const { tasks } = await store().enqueueTasks(queue, [{ type: "join", dependsOn: [a, b] }], EARLY);
    const join = tasks[0]!.id;
    for (const [id, at] of [
      [a, EARLY + 10],
      [b, EARLY + 20],
    ] as const) {
      const leased = await leaseOne(queue, at);
      expect(leased.id).toBe(id);
      const [outcome] = await store().completeTasks([{ id, leaseToken: leased.leaseToken }], at);
      expect(outcome).toMatchObject({ ok: true, state: "completed" });
      expect(await store().findTaskState(id)).toBe("completed");
    }
    expect(await store().findTaskState(join)).toBe("pending");
    const [outcome] = await store().completeTasks(
      [{ id: join, leaseToken: (await leaseOne(queue, EARLY + 30)).leaseToken }],
      EARLY + 31,
    );
    expect(outcome).toMatchObject({ ok: true, state: "completed" });
    // The join had no dependent: deleted by its completion; the kept dependencies go at the next prune.
    expect(await exists(join)).toBe(false);
    await pruneAt(EARLY + 60_000);
    expect(await exists(a)).toBe(false);
    expect(await exists(b)).toBe(false);
  });

  it("one ack of several: each task is deleted or kept on its own, every item answered once", async () => {
    const queue = await zeroQueue("r0-mixed");
    const plain = await enqueueOne(queue, {}, T0);
    const parent = await enqueueOne(queue, { then: [{ type: "child" }] }, T0 + 1);
    const other = await enqueueOne(queue, {}, T0 + 2);
    const leased = await store().leaseTasks({ queue, max: 3, visibilityTimeoutS: 30, holder: "w" }, T0 + 3);
    expect(leased).toHaveLength(3);
    const outcomes = await store().completeTasks(
      leased.map((t) => ({ id: t.id, leaseToken: t.leaseToken! })),
      T0 + 4,
    );
    expect(outcomes.map((o) => o.ok && o.state)).toEqual(["completed", "completed", "completed"]);
    expect(await exists(plain)).toBe(false);
    expect(await exists(other)).toBe(false);
    expect(await store().findTaskState(parent)).toBe("completed");
  });

  it("a queue that keeps its finished tasks still keeps completed ones (retention 60 s)", async () => {
    const queue = uniqueQueue("r0-kept");
    await store().putQueueConfig(queue, { retention_s: 60 }, T0, PROCESSORS);
    const id = await completedTask(queue);
    expect(await store().findTaskState(id)).toBe("completed");
  });
});

it("retention_s accepts 0 or at least 60, and names the field otherwise", () => {
  expect(QueueConfigSchema.partial().safeParse({ retention_s: 0 }).success).toBe(true);
  expect(QueueConfigSchema.partial().safeParse({ retention_s: 60 }).success).toBe(true);
  const bad = QueueConfigSchema.partial().safeParse({ retention_s: 30 });
  expect(bad.success).toBe(false);
  expect(bad.error?.issues[0]?.path).toEqual(["retention_s"]);
});
