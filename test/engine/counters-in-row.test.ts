import { expect, it } from "vitest";
import { uniqueQueue, PROCESSORS } from "../helpers";
import { afterFoldCursor } from "../support/fold-clock";
import { describeStore, PACK_STORE, type StoreKind } from "./conformance/store-kinds";
import { COUNTER_FOLD_GRACE_MS } from "../../src/engine/counters-in-row";
import type { TaskStore } from "../../src/engine/store";

const MINUTE_MS = 60_000;

/** The counters of `queue` summed over all time, per type, without the queue's name (for comparing two). */
async function countsOf(store: TaskStore, queue: string) {
  const rows = await store.sumCounters({ queue });
  return Object.fromEntries(
    rows.map((r) => [r.type, Object.fromEntries(Object.entries(r).filter(([k]) => k !== "queue"))]),
  );
}

/**
 * A mixed life at `t` on `queue`: enqueues of two types (one due earlier: a wait), a lease of all, a completion
 * with a run time, a completion of a task whose cancel was requested (cancelled), a retryable failure, and a
 * lapsed lease taken over by a second lease (a failed attempt), then completed.
 */
async function mixedLife(store: TaskStore, queue: string, t: number): Promise<void> {
  const { tasks } = await store.enqueueTasks(
    queue,
    [{ type: "a", runAt: t - 5_000 }, { type: "a" }, { type: "a" }, { type: "b" }],
    t,
  );
  const leased = await store.leaseTasks({ queue, max: 10, visibilityTimeoutS: 30, holder: "w" }, t + 2_000);
  expect(leased).toHaveLength(4);
  const token = (id: string) => leased.find((x) => x.id === id)!.leaseToken!;
  const [a1, a2, a3, b] = tasks.map((x) => x.id) as [string, string, string, string];
  await store.completeTasks([{ id: a1, leaseToken: token(a1), result: 1 }], t + 3_000);
  await store.cancelTask(a2, t + 3_100);
  await store.completeTasks([{ id: a2, leaseToken: token(a2) }], t + 3_500);
  await store.failTasks([{ id: a3, leaseToken: token(a3), message: "again", retryable: true }], t + 4_000);
  // b's lease lapses at t + 32 s; past its 10 s backoff a lease takes it over.
  const [again] = await store.leaseTasks({ queue, max: 1, visibilityTimeoutS: 30, holder: "w2" }, t + 43_000);
  expect(again?.id).toBe(b);
  await store.completeTasks([{ id: b, leaseToken: again!.leaseToken! }], t + 45_000);
}

/**
 * `it`, for a property that does not apply to the pack store: declared skipped on it, its title saying why
 * (visible in every run, never a silent pass). The pack store counts every transition in its write's own
 * batch and keeps no counter event in a pack (src/engine/packs/counter-folds.ts).
 */
function itNotOnPacks(kind: StoreKind, why: string): (title: string, fn: () => Promise<void>) => void {
  if (kind.name !== PACK_STORE.name) return (title, fn) => it(title, fn);
  return (title, fn) => it.skip(`${title} — not run: pack store: ${why}`, fn);
}

describeStore(
  "counters kept in task rows until the tick folds them",
  (kind: StoreKind) => {
    const store = () => kind.store();
    const inRowsOnly = itNotOnPacks(kind, "counts each write in its batch, keeps no counter events in packs");
    /** Folds until the cursor reached `now`'s horizon. */
    async function fold(now: number, on: TaskStore = store()) {
      for (let i = 0; i < 20; i++) if (!(await on.foldCountersInRows(now)).more) return;
    }

    // Its life's last lease (max 1) must take the lapsed lease over before a retried task that is due too. The
    // fold over packs is held by test/engine/packs/reads.test.ts.
    itNotOnPacks(kind, "its lease orders a retried slot by its pack's run time, not its own (packs.md, Left)")(
      "count exactly what counting on the path counts, before the fold (read from the rows) and after it",
      async () => {
        const base = await afterFoldCursor();
        // The cursor placed past the first life: that one is counted on its path, as on a database never folded.
        await fold(base + 10 * MINUTE_MS);
        const onPath = uniqueQueue("cir-path");
        await mixedLife(store(), onPath, base);
        const inRow = uniqueQueue("cir-row");
        await mixedLife(store(), inRow, base + 20 * MINUTE_MS);
        const expected = await countsOf(store(), onPath);
        // Before the fold: read from the task rows by every reader of the counters, the same counts.
        expect(await countsOf(store(), inRow)).toEqual(expected);
        await fold(base + 30 * MINUTE_MS);
        expect(expected.a).toMatchObject({ enqueued: 3, leased: 3, completed: 1, cancelled: 1, failed: 1 });
        expect(expected.b).toMatchObject({ enqueued: 1, leased: 2, completed: 1, failed: 1 });
        expect(await countsOf(store(), inRow)).toEqual(expected);
        // A second fold, and one that overlaps (an older `now`), add nothing.
        await fold(base + 31 * MINUTE_MS);
        await fold(base + 25 * MINUTE_MS);
        expect(await countsOf(store(), inRow)).toEqual(expected);
      },
    );

    it("a task the fold has passed is counted on its path from then on, never twice", async () => {
      const base = await afterFoldCursor();
      await fold(base);
      const queue = uniqueQueue("cir-passed");
      const { tasks } = await store().enqueueTasks(queue, [{}], base + MINUTE_MS);
      const [task] = await store().leaseTasks(
        { queue, max: 1, visibilityTimeoutS: 3_600, holder: "w" },
        base + MINUTE_MS + 1_000,
      );
      // The fold passes the task: its enqueue and lease go to the counters, its row keeps nothing more.
      await fold(base + 5 * MINUTE_MS);
      expect((await countsOf(store(), queue)).default).toMatchObject({ enqueued: 1, leased: 1, completed: 0 });
      await store().completeTasks([{ id: tasks[0]!.id, leaseToken: task!.leaseToken! }], base + 6 * MINUTE_MS);
      expect((await countsOf(store(), queue)).default).toMatchObject({ enqueued: 1, leased: 1, completed: 1 });
      await fold(base + 10 * MINUTE_MS);
      expect((await countsOf(store(), queue)).default).toMatchObject({ enqueued: 1, leased: 1, completed: 1 });
      expect((await store().getTask(tasks[0]!.id)).uncounted).toBeNull();
    });

    it("a completion that keeps nothing (retention_s 0) keeps the row's events in its tombstone: all counted at once, and once folded", async () => {
      const base = await afterFoldCursor();
      await fold(base);
      const queue = uniqueQueue("cir-r0");
      await store().putQueueConfig(queue, { retention_s: 0 }, base, PROCESSORS);
      await store().enqueueTasks(queue, [{}, {}], base + MINUTE_MS);
      const leased = await store().leaseTasks({ queue, max: 2, visibilityTimeoutS: 30, holder: "w" }, base + MINUTE_MS);
      await store().completeTasks(
        leased.map((t) => ({ id: t.id, leaseToken: t.leaseToken! })),
        base + MINUTE_MS + 500,
      );
      const counted = { enqueued: 2, leased: 2, completed: 2, run_count: 2, run_sum_ms: 1_000, wait_count: 2 };
      expect((await countsOf(store(), queue)).default).toMatchObject(counted);
      await fold(base + 5 * MINUTE_MS);
      expect((await countsOf(store(), queue)).default).toMatchObject(counted);
    });

    inRowsOnly("a purge leaves a task whose row still keeps its events until the fold passed it", async () => {
      const base = await afterFoldCursor();
      await fold(base);
      const queue = uniqueQueue("cir-prune");
      await store().putQueueConfig(queue, { retention_s: 60 }, base, PROCESSORS);
      const { tasks } = await store().enqueueTasks(queue, [{}], base + MINUTE_MS);
      const [task] = await store().leaseTasks({ queue, max: 1, visibilityTimeoutS: 30, holder: "w" }, base + MINUTE_MS);
      await store().completeTasks([{ id: task!.id, leaseToken: task!.leaseToken! }], base + MINUTE_MS);
      const id = tasks[0]!.id;
      // Past its retention, but the fold has not passed it (no tick since). (The retention prune reads the same
      // condition; it is not run here: its walk would reach other files' tasks at this time.)
      expect(await store().purgeTasks(queue, { before: base + 10 * MINUTE_MS })).toEqual({ purged: 0 });
      expect(await store().findTaskState(id)).toBe("completed");
      await fold(base + 10 * MINUTE_MS);
      expect((await countsOf(store(), queue)).default).toMatchObject({ enqueued: 1, leased: 1, completed: 1 });
      expect(await store().purgeTasks(queue, { before: base + 10 * MINUTE_MS })).toEqual({ purged: 1 });
    });

    inRowsOnly(
      "writes no counter row per call: a life at batch 1 and 100 writes the task's own rows, the fold one row per (queue, type, minute)",
      async () => {
        const base = await afterFoldCursor();
        await fold(base);
        const { store: measured, rowsWritten, reset } = kind.measure();
        const queue = uniqueQueue("cir-cost");
        for (const [k, n] of [1, 100].entries()) {
          const t = base + (k + 1) * MINUTE_MS;
          reset();
          await measured.enqueueTasks(
            queue,
            Array.from({ length: n }, (_, i) => ({ payload: { i } })),
            t,
          );
          const enqueue = rowsWritten();
          reset();
          const leased = await measured.leaseTasks({ queue, max: n, visibilityTimeoutS: 30, holder: "w" }, t + 1);
          const lease = rowsWritten();
          reset();
          await measured.completeTasks(
            leased.map((x) => ({ id: x.id, leaseToken: x.leaseToken! })),
            t + 2,
          );
          const complete = rowsWritten();
          expect({ enqueue, lease, complete }).toEqual(kind.costs.lifeCountedInRow(n));
        }
        reset();
        await fold(base + 10 * MINUTE_MS, measured);
        // Two minutes of one (queue, type): two counter rows, and the cursor.
        expect(rowsWritten()).toBe(kind.costs.foldOf(2));
        expect((await countsOf(store(), queue)).default).toMatchObject({ enqueued: 101, leased: 101, completed: 101 });
      },
    );

    inRowsOnly("the grace: a fold leaves tasks younger than COUNTER_FOLD_GRACE_MS in their rows", async () => {
      const base = await afterFoldCursor();
      await fold(base);
      const queue = uniqueQueue("cir-grace");
      const t = base + MINUTE_MS;
      await store().enqueueTasks(queue, [{}, {}], t);
      const [first, second] = await store().leaseTasks({ queue, max: 2, visibilityTimeoutS: 600, holder: "w" }, t);
      const { store: measured, rowsWritten, reset } = kind.measure();
      // Within the grace the fold leaves the tasks' counts in their rows: a completion writes its row only.
      await fold(t + COUNTER_FOLD_GRACE_MS - 1);
      reset();
      await measured.completeTasks([{ id: first!.id, leaseToken: first!.leaseToken! }], t + 40_000);
      expect(rowsWritten()).toBe(kind.costs.lifeCountedInRow(1).complete);
      // Past it the fold has passed them: the next completion is counted on its path (a counter row more).
      await fold(t + COUNTER_FOLD_GRACE_MS + 1);
      reset();
      await measured.completeTasks([{ id: second!.id, leaseToken: second!.leaseToken! }], t + 50_000);
      expect(rowsWritten()).toBe(kind.costs.life(1).complete);
      expect((await countsOf(store(), queue)).default).toMatchObject({ enqueued: 2, leased: 2, completed: 2 });
    });
  },
  { needs: ["core", "operator", "queueConfig", "counters", "counterFolds"] },
);
