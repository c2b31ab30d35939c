import { expect, it } from "vitest";
import { PROCESSORS, T0, uniqueQueue } from "../helpers";
import { describeStore } from "./conformance/store-kinds";

// What flow control costs, measured with the store's own meter (D1's meta.rows_written / rows_read): the
// figures docs/flow-control.md states. Times: this file's own range, from T0 + 8 days.
const T = T0 + 8 * 86_400_000;

describeStore("flow control: rows written and read", (kind) => {
  async function life(queue: string, keyOf: (i: number) => string | undefined, n = 100) {
    const { store, rowsWritten, rowsRead, reset } = kind.measure();
    reset();
    await store.enqueueTasks(
      queue,
      Array.from({ length: n }, (_, i) => ({ payload: { i }, key: keyOf(i) })),
      T,
    );
    const enqueue = rowsWritten();
    reset();
    const leased = await store.leaseTasks({ queue, max: n, visibilityTimeoutS: 30, holder: "w" }, T + 1);
    expect(leased).toHaveLength(n);
    const lease = rowsWritten();
    const leaseRead = rowsRead();
    reset();
    await store.completeTasks(
      leased.map((t) => ({ id: t.id, leaseToken: t.leaseToken! })),
      T + 2,
    );
    const complete = rowsWritten();
    return { enqueue, lease, complete, perTask: (enqueue + lease + complete) / n, leaseRead };
  }

  it("an unkeyed task on a queue without flow config writes what it always did (4.03 at batch 100)", async () => {
    const cost = await life(uniqueQueue("flowcost"), () => undefined);
    expect(cost.perTask).toBe(kind.costs.perTaskAtBatch100);
  });

  it("a keyed task writes 2 rows more (its index entry at enqueue and at its first lease), plus 1 per lease", async () => {
    // A queue without a flow config: keyed tasks are leased by today's statement.
    const plain = await life(uniqueQueue("flowcost"), (i) => `k${i % 10}`);
    expect(plain).toMatchObject({ enqueue: 301, lease: 201, complete: 101 });
    // With flow control (fair shares over 10 keys, a concurrency limit): one more row per lease (the queue's
    // flow_keys row: its cursor).
    const queue = uniqueQueue("flowcost");
    await kind.store().putQueueConfig(queue, { flow: { fair: true, default: { concurrency: 50 } } }, T, PROCESSORS);
    const flow = await life(queue, (i) => `k${i % 10}`);
    expect(flow).toMatchObject({ enqueue: 301, lease: 202, complete: 101 });
    expect(flow.perTask).toBe(6.04);
    // And a rate-limited key writes its bucket: one row per key per lease.
    const rated = uniqueQueue("flowcost");
    await kind
      .store()
      .putQueueConfig(rated, { flow: { default: { rate: { count: 1000, per: "second" } } } }, T, PROCESSORS);
    expect(await life(rated, (i) => `k${i % 10}`)).toMatchObject({ enqueue: 301, lease: 212, complete: 101 });
  });

  it("an unkeyed task on a flow queue writes 1 row more (its tasks_unkeyed entry), plus the lease's queue row", async () => {
    const queue = uniqueQueue("flowcost");
    await kind.store().putQueueConfig(queue, { flow: { default: { concurrency: 5 } } }, T, PROCESSORS);
    expect(await life(queue, () => undefined)).toMatchObject({ enqueue: 301, lease: 102, complete: 101 });
  });

  it("a lease of 100 over 1,000 active keys reads in proportion to the keys it looks at, not the backlog", async () => {
    const { store, rowsRead, reset } = kind.measure();
    const queue = uniqueQueue("flowcost");
    await store.putQueueConfig(queue, { flow: { fair: true, default: { concurrency: 5 } } }, T, PROCESSORS);
    for (let i = 0; i < 10; i++) {
      await store.enqueueTasks(
        queue,
        Array.from({ length: 1000 }, (_, j) => ({ key: `k${(i * 1000 + j) % 1000}` })),
        T,
      );
    }
    reset();
    const leased = await store.leaseTasks({ queue, max: 100, visibilityTimeoutS: 30, holder: "w" }, T + 1);
    expect(leased).toHaveLength(100);
    expect(new Set(leased.map((t) => t.flowKey)).size).toBe(100);
    const read = rowsRead();
    // 10,000 tasks pending: the lease reads per key it looks at (keyWindow(100) = 200 keys), plus the unkeyed
    // front (400 live tasks) — 6,634 rows here: the pick is computed once (migration 0019: the second statement
    // leases the ids the first wrote), where computing it in both statements read 12,552. (Today's statement in
    // the same batch stops at once on a flow queue: before, it walked all 10,000: 22,544.)
    console.log(`flow lease of 100 over 1,000 keys (10,000 pending): ${read} rows read`);
    expect(read).toBeLessThan(10_000);
    // A plain queue's lease of 100: what the flow statements add to it (the queue's row, read twice).
    const plainQueue = uniqueQueue("flowcost");
    await store.enqueueTasks(
      plainQueue,
      Array.from({ length: 100 }, () => ({})),
      T,
    );
    reset();
    await store.leaseTasks({ queue: plainQueue, max: 100, visibilityTimeoutS: 30, holder: "w" }, T + 1);
    console.log(`plain lease of 100: ${rowsRead()} rows read`);
  });
});
