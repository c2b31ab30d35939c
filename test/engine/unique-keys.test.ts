import { expect, it } from "vitest";
import type { NewTask } from "../../src/engine/enqueue";
import { uniqueQueue } from "../helpers";
import { clockRange } from "../support/clock-range";
import { expectEdgeqError, storeFixtures } from "./conformance/fixtures";
import { describeStore } from "./conformance/store-kinds";

// Uniqueness over time (src/engine/unique-keys.ts): idempotency windows, debounce and singletons, through
// the store's enqueue. Each test has queues of its own (keys are per queue) and a time range of its own.
// The key prune walks every queue's keys: the file works in a clock range of its own (test/support/clock-range.ts).
const clock = clockRange("engine/unique-keys");
const at = (n: number) => clock.day(n);

const idem = (key: string, windowS = 60): NewTask["unique"] => ({ mode: "idempotency", key, windowMs: windowS * 1000 });
const debounce = (key: string, windowS = 1): NewTask["unique"] => ({ mode: "debounce", key, windowMs: windowS * 1000 });
const singleton = (key: string, whileRunning: "skip" | "replace"): NewTask["unique"] => ({
  mode: "singleton",
  key,
  whileRunning,
});

describeStore("idempotency keys with a window", (kind) => {
  const { store, enqueueOne, leaseOne, countTasks, row } = storeFixtures(kind);

  it("960 concurrent enqueues of 60 keys within the window make exactly 60 tasks, each answered with its key's", async () => {
    const t = at(1);
    const queue = uniqueQueue("idem");
    const calls = Array.from({ length: 960 }, (_, n) => ({ key: `k${n % 60}`, n }));
    const answers = await Promise.all(
      calls.map(({ key, n }) => store().enqueueTasks(queue, [{ payload: { n }, unique: idem(key) }], t + (n % 7))),
    );
    expect(await countTasks(queue)).toBe(60);
    const byKey = new Map<string, Set<string>>();
    answers.forEach((a, n) => {
      const key = calls[n]!.key;
      byKey.set(key, (byKey.get(key) ?? new Set()).add(a.tasks[0]!.id));
    });
    // One task per key, every call of the key answered with it; 60 created, 900 deduplicated.
    expect([...byKey.values()].every((ids) => ids.size === 1)).toBe(true);
    expect(new Set([...byKey.values()].map((ids) => [...ids][0])).size).toBe(60);
    expect(answers.filter((a) => !a.tasks[0]!.deduplicated)).toHaveLength(60);
  });

  it("within the window a finished task is answered; after it, the key makes a new task", async () => {
    const t = at(2);
    const queue = uniqueQueue("idem-window");
    const first = await enqueueOne(queue, { payload: { v: 1 }, unique: idem("order-7", 60) }, t);
    const leased = await leaseOne(queue, t + 1);
    await store().completeTasks([{ id: first, leaseToken: leased.leaseToken }], t + 2);

    const again = await store().enqueueTasks(queue, [{ payload: { v: 2 }, unique: idem("order-7", 60) }], t + 59_999);
    expect(again.tasks).toEqual([{ id: first, state: "completed", deduplicated: true }]);
    expect(again.earliestRunAt).toBeNull();

    const after = await store().enqueueTasks(queue, [{ payload: { v: 3 }, unique: idem("order-7", 60) }], t + 60_000);
    expect(after.tasks[0]).toMatchObject({ state: "pending", deduplicated: false });
    expect(after.tasks[0]!.id).not.toBe(first);
    expect(JSON.parse((await row(after.tasks[0]!.id)).payload)).toEqual({ v: 3 });
    // A repeat within one call is answered with the first of the call.
    const repeat = await store().enqueueTasks(
      queue,
      [
        { payload: 1, unique: idem("twice") },
        { payload: 2, unique: idem("twice") },
      ],
      t + 60_001,
    );
    expect(repeat.tasks[1]).toEqual({ id: repeat.tasks[0]!.id, state: "pending", deduplicated: true });
  });

  it("a key is its queue's: the same key in another queue makes its own task", async () => {
    const t = at(3);
    const [a, b] = [uniqueQueue("idem-a"), uniqueQueue("idem-b")];
    const one = await enqueueOne(a, { unique: idem("same") }, t);
    const two = await enqueueOne(b, { unique: idem("same") }, t);
    expect(one).not.toBe(two);
  });

  it("refuses a key with a dedupe key, and a debounce key twice in a call, storing nothing", async () => {
    const t = at(4);
    const queue = uniqueQueue("idem-refused");
    const error = await expectEdgeqError(
      store().enqueueTasks(queue, [{ dedupeKey: "d", unique: idem("x") }], t),
      "invalid_request",
    );
    expect(error.message).toMatch(/^tasks\[0\]\.idempotency: not with dedupe_key/);
    const twice = await expectEdgeqError(
      store().enqueueTasks(queue, [{ unique: debounce("k") }, { unique: debounce("k") }], t),
      "invalid_request",
    );
    expect(twice.message).toMatch(/^tasks\[1\]\.debounce: its key is also tasks\[0\]\.debounce's/);
    expect(await countTasks(queue)).toBe(0);
  });
});

describeStore("debounce", (kind) => {
  const { store, lease, leaseOne, countTasks, row } = storeFixtures(kind);

  it("100 enqueues of one key 10 ms apart make one run, with the last payload, a window after the last", async () => {
    const t = at(10);
    const queue = uniqueQueue("debounce");
    const ids = new Set<string>();
    for (let n = 0; n < 100; n++) {
      const now = t + n * 10;
      const { tasks } = await store().enqueueTasks(queue, [{ payload: { n }, unique: debounce("search", 1) }], now);
      ids.add(tasks[0]!.id);
      // Nothing runs while enqueues keep coming (each moved the run time a window on).
      expect(await lease(queue, now + 5)).toEqual([]);
    }
    expect(ids.size).toBe(1);
    expect(await countTasks(queue)).toBe(1);
    const last = t + 99 * 10;
    expect(await lease(queue, last + 999)).toEqual([]);
    const task = await leaseOne(queue, last + 1000);
    expect(JSON.parse(task.payload)).toEqual({ n: 99 });
    expect(task.runAt).toBe(last + 1000);
    // Once started, the key makes a new task (the running one is not changed).
    const next = await store().enqueueTasks(
      queue,
      [{ payload: { n: 100 }, unique: debounce("search", 1) }],
      last + 1001,
    );
    expect(next.tasks[0]!.deduplicated).toBe(false);
    expect(JSON.parse((await row(task.id)).payload)).toEqual({ n: 99 });
  });
});

describeStore("singleton keys", (kind) => {
  const { store, lease, leaseOne, enqueueOne, row } = storeFixtures(kind);

  it("skip: while one waits or runs, an enqueue is answered with it; once it finished, a new one", async () => {
    const t = at(20);
    const queue = uniqueQueue("single-skip");
    const first = await enqueueOne(queue, { payload: 1, unique: singleton("nightly", "skip") }, t);
    const waiting = await store().enqueueTasks(queue, [{ payload: 2, unique: singleton("nightly", "skip") }], t + 1);
    expect(waiting.tasks).toEqual([{ id: first, state: "pending", deduplicated: true }]);
    const held = await leaseOne(queue, t + 2);
    const running = await store().enqueueTasks(queue, [{ payload: 3, unique: singleton("nightly", "skip") }], t + 3);
    expect(running.tasks).toEqual([{ id: first, state: "processing", deduplicated: true }]);
    expect(JSON.parse((await row(first)).payload)).toBe(1);
    await store().completeTasks([{ id: first, leaseToken: held.leaseToken }], t + 4);
    const after = await store().enqueueTasks(queue, [{ payload: 4, unique: singleton("nightly", "skip") }], t + 5);
    expect(after.tasks[0]).toMatchObject({ state: "pending", deduplicated: false });
  });

  it("replace: one task queues behind the running one, its payload the latest, leased only once the running one finished", async () => {
    const t = at(21);
    const queue = uniqueQueue("single-replace");
    const first = await enqueueOne(queue, { payload: 1, unique: singleton("sync", "replace") }, t);
    // While it waits, an enqueue replaces its payload.
    await store().enqueueTasks(queue, [{ payload: 2, unique: singleton("sync", "replace") }], t + 1);
    expect(JSON.parse((await row(first)).payload)).toBe(2);
    const held = await leaseOne(queue, t + 2);
    // While it runs: one task queued behind it, then replaced by the next.
    const behind = await store().enqueueTasks(queue, [{ payload: 3, unique: singleton("sync", "replace") }], t + 3);
    expect(behind.tasks[0]).toMatchObject({ state: "pending", deduplicated: false });
    const second = behind.tasks[0]!.id;
    const again = await store().enqueueTasks(queue, [{ payload: 4, unique: singleton("sync", "replace") }], t + 4);
    expect(again.tasks).toEqual([{ id: second, state: "pending", deduplicated: true }]);
    expect(await row(second)).toMatchObject({ afterId: first, payload: "4" });
    // Not leased while the first runs, nor while it waits for a retry.
    expect(await lease(queue, t + 5)).toEqual([]);
    await store().failTasks([{ id: first, leaseToken: held.leaseToken, message: "x", retryAfterS: 1 }], t + 6);
    const retry = await leaseOne(queue, t + 2000);
    expect(retry.id).toBe(first);
    expect(await lease(queue, t + 2001)).toEqual([]);
    await store().completeTasks([{ id: first, leaseToken: retry.leaseToken }], t + 2002);
    expect((await leaseOne(queue, t + 2003)).id).toBe(second);
  });
});

describeStore("key pruning", (kind) => {
  const { store, enqueueOne, completedTask } = storeFixtures(kind);

  it("prunes keys past their window whose task is not live, and keeps the rest", async () => {
    const t = at(30);
    const queue = uniqueQueue("prune");
    await completedTask(queue, { unique: idem("old", 1) }, t);
    await enqueueOne(queue, { unique: idem("waiting", 1) }, t);
    const live = await enqueueOne(queue, { unique: idem("young", 3600) }, t);
    // Passes until the walk wraps round (it goes on from wherever the last one stopped).
    let pruned = 0;
    for (let pass = 0; pass < 3; pass++) pruned += (await store().pruneExpiredKeys(t + 2000)).pruned;
    // "old" (window over, task completed) goes; "waiting" (task live) and "young" (window open) stay. (Other
    // files' keys past their time may go too: the database is shared.)
    expect(pruned).toBeGreaterThanOrEqual(1);
    const young = await store().enqueueTasks(queue, [{ unique: idem("young", 3600) }], t + 2001);
    expect(young.tasks[0]).toMatchObject({ id: live, deduplicated: true });
  });
});
