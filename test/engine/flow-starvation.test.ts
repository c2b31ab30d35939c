import { expect, it } from "vitest";
import type { FlowConfig } from "../../src/contracts/flow";
import type { NewTask } from "../../src/engine/enqueue";
import { PROCESSORS, T0, uniqueQueue } from "../helpers";
import { storeFixtures } from "./conformance/fixtures";
import { describeStore } from "./conformance/store-kinds";

// A blocked keyed backlog (a key paused, at its concurrency limit, or ordered behind its retry) at the head
// of a flow queue must not starve what can be leased behind it: unkeyed tasks and other keys' tasks
// (docs/flow-control.md, "Unkeyed tasks on a flow queue"). Times: this file's own range, from T0 + 9 days.
const T = T0 + 9 * 86_400_000;

/** The blocked key's backlog, ahead of everything else in lease order (enqueued first, same priority). */
const BACKLOG = 1000;

describeStore("flow control: nothing starves behind a blocked keyed backlog", (kind) => {
  const { store, enqueueMany, lease } = storeFixtures(kind);

  async function flowQueue(flow: FlowConfig): Promise<string> {
    const queue = uniqueQueue("flowst");
    await store().putQueueConfig(queue, { flow }, T, PROCESSORS);
    return queue;
  }

  async function enqueueBacklog(queue: string, task: NewTask, now: number): Promise<void> {
    for (let i = 0; i < BACKLOG; i += 500) {
      await enqueueMany(
        queue,
        Array.from({ length: 500 }, () => task),
        now,
      );
    }
  }

  /** The blocked key's backlog due first, then 5 unkeyed tasks: a lease of 5 gets the 5, reading less than
   * the backlog. */
  async function expectUnkeyedFound(queue: string, now: number): Promise<void> {
    const unkeyed = await enqueueMany(
      queue,
      Array.from({ length: 5 }, () => ({})),
      now + 1,
    );
    const { store: metered, rowsRead, reset } = kind.measure();
    reset();
    const leased = await metered.leaseTasks({ queue, max: 5, visibilityTimeoutS: 30, holder: "w" }, now + 2);
    expect(leased.map((t) => t.id).sort()).toEqual([...unkeyed].sort());
    expect(rowsRead()).toBeLessThan(BACKLOG);
  }

  it("a paused key's 1,000 due tasks ahead of 5 unkeyed ones: a lease of 5 gets the 5", async () => {
    const queue = await flowQueue({});
    await enqueueBacklog(queue, { key: "big" }, T);
    await store().setFlowPaused(queue, "big", true, T);
    await expectUnkeyedFound(queue, T);
  });

  it("a key at its concurrency limit with 1,000 due tasks ahead of 5 unkeyed ones: a lease of 5 gets the 5", async () => {
    const queue = await flowQueue({ default: { concurrency: 1 } });
    await enqueueMany(queue, [{ key: "big" }], T);
    expect(await lease(queue, T + 1, 1)).toHaveLength(1);
    await enqueueBacklog(queue, { key: "big" }, T + 2);
    await expectUnkeyedFound(queue, T + 2);
  });

  it("an ordered key held by its retry, 1,000 due tasks behind it, ahead of 5 unkeyed ones: a lease of 5 gets the 5", async () => {
    const queue = await flowQueue({ default: { ordered: true } });
    await enqueueMany(queue, [{ key: "big" }], T);
    const [first] = await lease(queue, T + 1, 1);
    const [failed] = await store().failTasks(
      [{ id: first!.id, leaseToken: first!.leaseToken!, message: "later", retryable: true }],
      T + 2,
    );
    expect(failed).toMatchObject({ ok: true, state: "pending" });
    await enqueueBacklog(queue, { key: "big" }, T + 3);
    await expectUnkeyedFound(queue, T + 3);
  });

  it("another key's 5 tasks behind a paused key's 1,000: a lease of 5 gets the 5", async () => {
    const queue = await flowQueue({});
    await enqueueBacklog(queue, { key: "big" }, T);
    await store().setFlowPaused(queue, "big", true, T);
    const small = await enqueueMany(
      queue,
      Array.from({ length: 5 }, () => ({ key: "small" })),
      T + 1,
    );
    const leased = await lease(queue, T + 2, 5);
    expect(leased.map((t) => t.id).sort()).toEqual([...small].sort());
  });
});
