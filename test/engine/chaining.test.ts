import { decodeTime } from "ulid";
import { expect, it } from "vitest";
import type { ChildTaskSpec } from "../../src/contracts/task";
import type { NewTask } from "../../src/engine/enqueue";
import type { StoredTask } from "../../src/engine/store";
import { T0, uniqueQueue, PROCESSORS } from "../helpers";
import { VT_MS, storeFixtures } from "./conformance/fixtures";
import { describeStore, type StoreKind } from "./conformance/store-kinds";

/** The chaining tests' shortcuts over `kind`'s store. */
function chainFixtures(kind: StoreKind) {
  const fixtures = storeFixtures(kind);
  const { enqueueOne, leaseOne, row } = fixtures;

  /** Every task whose payload names `parentId` as its parent, in id order. */
  async function childrenOf(parentId: string): Promise<StoredTask[]> {
    return Promise.all((await kind.childrenOf(parentId)).map((id) => row(id)));
  }

  /** Enqueues a parent with `then` at T0 and leases it at T0. */
  async function leasedParent(queue: string, then: ChildTaskSpec[], task: NewTask = {}) {
    const id = await enqueueOne(queue, { type: "parent", ...task, then });
    const leased = await leaseOne(queue, T0);
    expect(leased.id).toBe(id);
    return leased;
  }

  return { ...fixtures, childrenOf, leasedParent };
}

const ULID = /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/;

describeStore("then: children are enqueued exactly when the parent completes", (kind) => {
  const { store, row, childrenOf, leasedParent } = chainFixtures(kind);

  it("a completion enqueues every child, in the same batch, and reports them", async () => {
    const queue = uniqueQueue("chain");
    const parent = await leasedParent(queue, [{ type: "a" }, { type: "b" }]);
    expect(await childrenOf(parent.id)).toEqual([]);

    const [outcome] = await store().completeTasks([{ id: parent.id, leaseToken: parent.leaseToken }], T0 + 10);

    expect(outcome).toMatchObject({ ok: true, state: "completed" });
    const children = await childrenOf(parent.id);
    expect(children.map((c) => c.type).sort()).toEqual(["a", "b"]);
    expect(children.every((c) => c.state === "pending" && c.attempts === 0)).toBe(true);
    expect(outcome!.ok && outcome!.children.map((c) => c.id).sort()).toEqual(children.map((c) => c.id));
    expect(await row(parent.id)).toMatchObject({ state: "completed" });
  });

  const noChildren: Array<[string, (p: { id: string; leaseToken: string }) => Promise<unknown>, string]> = [
    [
      "a retryable failure",
      (p) => store().failTasks([{ id: p.id, leaseToken: p.leaseToken, message: "boom" }], T0 + 10),
      "pending",
    ],
    [
      "a permanent failure (dead)",
      (p) => store().failTasks([{ id: p.id, leaseToken: p.leaseToken, message: "bad", retryable: false }], T0 + 10),
      "dead",
    ],
    [
      "a completion with a stale token",
      async (p) => {
        const [outcome] = await store().completeTasks([{ id: p.id, leaseToken: "0".repeat(32) }], T0 + 10);
        expect(outcome).toMatchObject({ ok: false, error: { code: "lease_lost" } });
      },
      "processing",
    ],
    [
      "a completion after the lease expired",
      async (p) => {
        const [outcome] = await store().completeTasks([{ id: p.id, leaseToken: p.leaseToken }], T0 + VT_MS);
        expect(outcome).toMatchObject({ ok: false, error: { code: "lease_lost" } });
      },
      "processing",
    ],
    [
      "a completion after a cancel was requested",
      async (p) => {
        await store().cancelTask(p.id, T0 + 5);
        const [outcome] = await store().completeTasks([{ id: p.id, leaseToken: p.leaseToken }], T0 + 10);
        expect(outcome).toMatchObject({ ok: false, error: { code: "task_cancelled" } });
      },
      "cancelled",
    ],
  ];

  it.each(noChildren)("%s enqueues no child", async (_name, act, state) => {
    const queue = uniqueQueue("chain");
    const parent = await leasedParent(queue, [{ type: "a" }, { type: "b", queue: uniqueQueue("chain-other") }]);

    await act(parent);

    expect((await row(parent.id)).state).toBe(state);
    expect(await childrenOf(parent.id)).toEqual([]);
  });

  it("a second completion with the same token is a repeat: told so, and enqueues nothing more", async () => {
    const queue = uniqueQueue("chain");
    const parent = await leasedParent(queue, [{ type: "a" }]);
    const item = { id: parent.id, leaseToken: parent.leaseToken, result: 1 };
    expect((await store().completeTasks([item], T0 + 10))[0]).toMatchObject({ ok: true });

    const [again] = await store().completeTasks([item], T0 + 11);

    expect(again).toMatchObject({ ok: true, state: "completed", repeated: true, children: [] });
    expect(await childrenOf(parent.id)).toHaveLength(1);
  });
});

describeStore("then: what a child gets", (kind) => {
  const { store, enqueueOne, lease, leaseOne, childrenOf, leasedParent } = chainFixtures(kind);

  it("its payload gets parent { id, type, result } next to its own fields; no payload gets just the parent", async () => {
    const queue = uniqueQueue("chain");
    const parent = await leasedParent(queue, [
      { type: "with", payload: { voice: "en", parent: "overwritten" } },
      { type: "without" },
    ]);
    const result = { tags: ["a", "b"], score: 0.5, nested: { ok: true }, text: 'quote " and \\' };

    await store().completeTasks([{ id: parent.id, leaseToken: parent.leaseToken, result }], T0 + 10);

    const children = await childrenOf(parent.id);
    const byType = Object.fromEntries(children.map((c) => [c.type, JSON.parse(c.payload) as unknown]));
    const parentInfo = { id: parent.id, type: "parent", result };
    expect(byType).toEqual({
      with: { voice: "en", parent: parentInfo },
      without: { parent: parentInfo },
    });
  });

  it("a parent completed without a result gives its children result null", async () => {
    const queue = uniqueQueue("chain");
    const parent = await leasedParent(queue, [{ type: "a" }]);

    await store().completeTasks([{ id: parent.id, leaseToken: parent.leaseToken }], T0 + 10);

    const [child] = await childrenOf(parent.id);
    expect(JSON.parse(child!.payload)).toEqual({ parent: { id: parent.id, type: "parent", result: null } });
  });

  it("inherits the parent's queue, group and priority unless its spec overrides them", async () => {
    const queue = uniqueQueue("chain");
    const other = uniqueQueue("chain-other");
    const parent = await leasedParent(
      queue,
      [
        { type: "inherits" },
        { type: "overrides", queue: other, group: "g2", priority: 0 },
        { type: "negative", priority: -3 },
      ],
      { group: "g1", priority: 5 },
    );

    await store().completeTasks([{ id: parent.id, leaseToken: parent.leaseToken }], T0 + 10);

    const byType = Object.fromEntries((await childrenOf(parent.id)).map((c) => [c.type, c]));
    expect(byType.inherits).toMatchObject({ queue, groupKey: "g1", priority: 5 });
    expect(byType.overrides).toMatchObject({ queue: other, groupKey: "g2", priority: 0 });
    expect(byType.negative).toMatchObject({ queue, groupKey: "g1", priority: -3 });
  });

  it("delay_s puts its run_at that long after the completion; without it the child is due at once", async () => {
    const queue = uniqueQueue("chain");
    const parent = await leasedParent(queue, [
      { type: "now" },
      { type: "later", delay_s: 90 },
      { type: "fraction", delay_s: 1.5 },
    ]);

    const [outcome] = await store().completeTasks([{ id: parent.id, leaseToken: parent.leaseToken }], T0 + 10);

    const byType = Object.fromEntries((await childrenOf(parent.id)).map((c) => [c.type, c]));
    expect(byType.now!.runAt).toBe(T0 + 10);
    expect(byType.later!.runAt).toBe(T0 + 10 + 90_000);
    expect(byType.fraction!.runAt).toBe(T0 + 10 + 1_500);
    expect(outcome!.ok && outcome!.children.map((c) => c.run_at).sort()).toEqual(
      [T0 + 10, T0 + 10 + 1_500, T0 + 10 + 90_000].sort(),
    );
    // Lease order respects it: only the undelayed child is due at the completion time.
    expect((await lease(queue, T0 + 10)).map((t) => t.type)).toEqual(["now"]);
  });

  it("max_attempts comes from the child's queue config, unless its spec gives one", async () => {
    const queue = uniqueQueue("chain");
    const configured = uniqueQueue("chain-configured");
    const unconfigured = uniqueQueue("chain-default");
    await store().putQueueConfig(queue, { max_attempts: 9 }, T0, PROCESSORS);
    await store().putQueueConfig(configured, { max_attempts: 7 }, T0, PROCESSORS);
    const parent = await leasedParent(queue, [
      { type: "same-queue" },
      { type: "configured", queue: configured },
      { type: "unconfigured", queue: unconfigured },
      { type: "explicit", queue: configured, max_attempts: 2 },
    ]);

    await store().completeTasks([{ id: parent.id, leaseToken: parent.leaseToken }], T0 + 10);

    const byType = Object.fromEntries((await childrenOf(parent.id)).map((c) => [c.type, c.maxAttempts]));
    expect(byType).toEqual({ "same-queue": 9, configured: 7, unconfigured: 3, explicit: 2 });
  });

  it("a nested then is stored on the child and enqueues the grandchild when the child completes", async () => {
    const queue = uniqueQueue("chain");
    const grandchildSpec: ChildTaskSpec = { type: "grandchild", payload: { level: 2 } };
    const parent = await leasedParent(queue, [{ type: "child", then: [grandchildSpec] }]);

    await store().completeTasks([{ id: parent.id, leaseToken: parent.leaseToken }], T0 + 10);
    const [child] = await childrenOf(parent.id);
    expect(child).toMatchObject({ type: "child" });
    expect(JSON.parse(child!.thenTasks!)).toEqual([grandchildSpec]);
    // Not before the child completes.
    expect(await childrenOf(child!.id)).toEqual([]);

    const leasedChild = await leaseOne(queue, T0 + 20);
    expect(leasedChild.id).toBe(child!.id);
    await store().completeTasks([{ id: child!.id, leaseToken: leasedChild.leaseToken, result: "child done" }], T0 + 30);

    const [grandchild] = await childrenOf(child!.id);
    expect(grandchild).toMatchObject({ type: "grandchild", queue, runAt: T0 + 30, thenTasks: null });
    expect(JSON.parse(grandchild!.payload)).toEqual({
      level: 2,
      parent: { id: child!.id, type: "child", result: "child done" },
    });
  });

  it("a child without then has no then_tasks", async () => {
    const queue = uniqueQueue("chain");
    const parent = await leasedParent(queue, [{ type: "leaf" }]);

    await store().completeTasks([{ id: parent.id, leaseToken: parent.leaseToken }], T0 + 10);

    const [child] = await childrenOf(parent.id);
    expect(child!.thenTasks).toBeNull();
  });

  it("two parents completed in one batch each get their own children, reported per parent", async () => {
    const queue = uniqueQueue("chain");
    const first = await enqueueOne(queue, { type: "p1", then: [{ type: "c1" }, { type: "c1" }] });
    const second = await enqueueOne(queue, { type: "p2", then: [{ type: "c2" }] });
    const leased = await lease(queue, T0);
    const token = (id: string) => leased.find((t) => t.id === id)!.leaseToken!;

    const outcomes = await store().completeTasks(
      [
        { id: first, leaseToken: token(first), result: "r1" },
        { id: second, leaseToken: token(second), result: "r2" },
      ],
      T0 + 10,
    );

    const ofFirst = await childrenOf(first);
    const ofSecond = await childrenOf(second);
    expect(ofFirst.map((c) => c.type)).toEqual(["c1", "c1"]);
    expect(ofSecond.map((c) => c.type)).toEqual(["c2"]);
    expect(ofFirst.map((c) => JSON.parse(c.payload).parent.result)).toEqual(["r1", "r1"]);
    expect(ofSecond.map((c) => JSON.parse(c.payload).parent.result)).toEqual(["r2"]);
    const reported = (k: number) => {
      const outcome = outcomes[k]!;
      return outcome.ok ? outcome.children.map((c) => c.id).sort() : null;
    };
    expect(reported(0)).toEqual(ofFirst.map((c) => c.id));
    expect(reported(1)).toEqual(ofSecond.map((c) => c.id));
  });

  it("a child whose dedupe key a live task holds is not enqueued again; a finished holder does not block it", async () => {
    const queue = uniqueQueue("chain");
    const live = await enqueueOne(queue, { type: "existing", dedupeKey: "live-key", runAt: T0 + 3_600_000 });
    const finishedHolder = await enqueueOne(queue, { type: "old", dedupeKey: "done-key", runAt: T0 + 3_600_000 });
    await store().cancelTask(finishedHolder, T0);
    const parent = await leasedParent(queue, [
      { type: "dup", dedupe_key: "live-key" },
      { type: "fresh", dedupe_key: "done-key" },
    ]);

    const [outcome] = await store().completeTasks([{ id: parent.id, leaseToken: parent.leaseToken }], T0 + 10);

    expect(outcome).toMatchObject({ ok: true, state: "completed" });
    const children = await childrenOf(parent.id);
    expect(children.map((c) => c.type)).toEqual(["fresh"]);
    expect(outcome!.ok && outcome!.children.map((c) => c.id)).toEqual([children[0]!.id]);
    const holders = await store().listTasks(queue, { dedupe_key: "live-key", limit: 100 });
    expect(holders.tasks.map((t) => t.id)).toEqual([live]);
  });

  it("children ids are ULIDs of the completion time, sorting after the parent's id", async () => {
    const queue = uniqueQueue("chain");
    const parent = await leasedParent(queue, [{ type: "a" }, { type: "b" }, { type: "c", delay_s: 60 }]);
    const completedAt = T0 + 1234;

    await store().completeTasks([{ id: parent.id, leaseToken: parent.leaseToken }], completedAt);

    const children = await childrenOf(parent.id);
    expect(children).toHaveLength(3);
    for (const child of children) {
      expect(child.id).toMatch(ULID);
      expect(decodeTime(child.id)).toBe(completedAt);
      expect(child.id > parent.id).toBe(true);
      expect(child).toMatchObject({ createdAt: completedAt, updatedAt: completedAt });
    }
    expect(new Set(children.map((c) => c.id)).size).toBe(3);
  });
});
