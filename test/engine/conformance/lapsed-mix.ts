import { expect } from "vitest";
import type { StoredTask, TaskStore } from "../../../src/engine/store";
import { PROCESSORS } from "../../helpers";

const DAY = 86_400_000;

/** What `lapsedMix` made. */
export interface LapsedMix {
  /** Two leases of 10 s (high priority), expired by `t + 120 s`. */
  expiring: StoredTask[];
  /** A provisional lease (low priority) handed out at `t + 1 s` for an hour, unclaimed by `t + 120 s`: past
   * its claim window, but still its holder's until another lease takes it over. */
  handed: StoredTask[];
}

/**
 * A queue whose live tasks span two priorities at time `t`, with a max_run_s of 60: 4 tasks of priority 5,
 * all leased (2 for 10 s, 2 for an hour), 6 of priority 0 (one handed out provisionally), and one delayed
 * three days. At `t + 120 s` the short leases have expired, the provisional one went unclaimed past its
 * claim window (but has not expired), and every lease has run over 60 s.
 *
 * @example
 * const { expiring, handed } = await lapsedMix(store, queue, t);
 */
export async function lapsedMix(store: TaskStore, queue: string, t: number): Promise<LapsedMix> {
  await store.putQueueConfig(queue, { max_run_s: 60 }, t, PROCESSORS);
  const high = await store.enqueueTasks(
    queue,
    Array.from({ length: 4 }, () => ({ priority: 5 })),
    t,
  );
  const low = await store.enqueueTasks(
    queue,
    Array.from({ length: 6 }, () => ({ priority: 0 })),
    t,
  );
  // Lease order: the 4 high-priority tasks first (2 short leases, 2 long), then the low ones.
  const expiring = await store.leaseTasks({ queue, max: 2, visibilityTimeoutS: 10, holder: "w" }, t);
  const running = await store.leaseTasks({ queue, max: 2, visibilityTimeoutS: 3600, holder: "w" }, t);
  const handed = await store.leaseTasks(
    { queue, max: 1, visibilityTimeoutS: 3600, holder: "poll", provisional: true },
    t + 1000,
  );
  expect([...expiring, ...running].map((r) => r.id).sort()).toEqual(high.tasks.map((r) => r.id).sort());
  expect(handed[0]!.id).toBe(low.tasks[0]!.id);
  const later = await store.enqueueTasks(queue, [{ runAt: t + 3 * DAY }], t);
  expect(later.tasks).toHaveLength(1);
  return { expiring, handed };
}
