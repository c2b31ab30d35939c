import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import { openDb } from "../../../src/db/client";
import { d1TaskStore } from "../../../src/engine/d1-store";
import type { TaskStore } from "../../../src/engine/store";
import { PROCESSORS, uniqueQueue } from "../../helpers";
import { afterFoldCursor } from "../../support/fold-clock";
import { atEveryD1Call } from "../../support/failing-d1";

const MINUTE = 60_000;
const good = () => d1TaskStore(openDb(env.DB));

/** Folds until the cursor reached `now`'s horizon. */
async function fold(store: TaskStore, now: number): Promise<void> {
  for (let i = 0; i < 20; i++) if (!(await store.foldCountersInRows(now)).more) return;
}

/**
 * A task's counts kept in its row (src/engine/counters-in-row.ts), through a life — enqueue, lease, complete
 * (kept, and deleted on a queue of retention_s 0), the tick's fold — stopped at every D1 call and taken up
 * again from the step that did not run: every transition counted exactly once, whichever statement counted
 * it (its own, the completion that deleted the task, or the fold).
 */
it("counts every transition exactly once when a life and its fold stop at any D1 call", async () => {
  // The cursor placed before the first scenario: every scenario's tasks keep their counts in their rows.
  const start = await afterFoldCursor();
  await fold(good(), start);
  const day = (n: number) => start + n * 86_400_000;
  const points = await atEveryD1Call(env, 100, async (broken, failAt) => {
    const t = day(failAt);
    const kept = uniqueQueue("crash-kept");
    const gone = uniqueQueue("crash-gone");
    await good().putQueueConfig(gone, { retention_s: 0 }, t, PROCESSORS);
    const brokenStore = d1TaskStore(openDb(broken.DB));
    const steps: Array<(store: TaskStore) => Promise<unknown>> = [];
    const tokens = new Map<string, { id: string; leaseToken: string }[]>();
    for (const queue of [kept, gone]) {
      steps.push((s) => s.enqueueTasks(queue, [{}, {}], t));
      steps.push(async (s) => {
        const leased = await s.leaseTasks({ queue, max: 2, visibilityTimeoutS: 300, holder: "w" }, t + 1_000);
        tokens.set(
          queue,
          leased.map((x) => ({ id: x.id, leaseToken: x.leaseToken! })),
        );
      });
      steps.push((s) => s.completeTasks(tokens.get(queue)!, t + 2_000));
    }
    steps.push((s) => fold(s, t + 5 * MINUTE));
    let outcome = "finished";
    let at = 0;
    for (; at < steps.length; at++) {
      const error = await steps[at]!(brokenStore).then(
        () => null,
        (e: unknown) => String(e),
      );
      if (error !== null) {
        outcome = error;
        break;
      }
    }
    // Made good: the step that did not run, and every one after it.
    for (; at < steps.length; at++) await steps[at]!(good());
    for (const queue of [kept, gone]) {
      const [sums] = await good().sumCounters({ queue });
      expect(sums, `${queue}, stopped at call ${failAt}`).toMatchObject({
        enqueued: 2,
        leased: 2,
        completed: 2,
        wait_count: 2,
        run_count: 2,
        run_sum_ms: 2_000,
      });
    }
    expect(await good().findTaskState(tokens.get(gone)![0]!.id)).toBeNull();
    return outcome;
  });
  expect(points).toBeGreaterThan(6);
}, 120_000);
