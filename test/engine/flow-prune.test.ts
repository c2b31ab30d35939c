import { expect, it } from "vitest";
import { PROCESSORS, T0, uniqueQueue } from "../helpers";
import { storeFixtures } from "./conformance/fixtures";
import { describeStore } from "./conformance/store-kinds";

// Idle flow-control state is forgotten (docs/flow-control.md, "Idle keys"): a key's row goes once the key has
// no live task, no pause and a full bucket, and a lease after the prune hands out what it would have.
// Times: this file's own range, from T0 + 10 days.
const T = T0 + 10 * 86_400_000;

describeStore("flow control: idle keys pruned", (kind) => {
  const { store, enqueueMany, lease } = storeFixtures(kind);

  /** Prunes until a whole pass of the table is done (the cursor back at its start): every row looked at. */
  async function pruneAll(now: number): Promise<number> {
    let pruned = 0;
    for (let i = 0; i < 20; i++) pruned += (await store().pruneIdleFlowKeys(now)).pruned;
    return pruned;
  }

  it("a rate-limited key's row is kept while its bucket refills, and pruned once full with no live task; pauses and live keys stay", async () => {
    const { store: metered, rowsWritten, reset } = kind.measure();
    const queue = uniqueQueue("flowprune");
    // 1 token a second, burst 2: a lease of both empties the bucket; full again 2 s later.
    await store().putQueueConfig(
      queue,
      { flow: { default: { rate: { count: 1, per: "second", burst: 2 } } } },
      T,
      PROCESSORS,
    );
    await enqueueMany(queue, [{ key: "spent" }, { key: "spent" }, { key: "live" }], T);
    const leased = await lease(queue, T + 1, 3);
    expect(leased).toHaveLength(3);
    const spent = leased.filter((t) => t.flowKey === "spent");
    await store().completeTasks(
      spent.map((t) => ({ id: t.id, leaseToken: t.leaseToken! })),
      T + 2,
    );
    await store().setFlowPaused(queue, "held", true, T + 2);

    // The bucket not full yet: nothing goes (the live key, the paused one, the queue's own row stay too).
    expect(await pruneAll(T + 1000)).toBe(0);

    // Full again (2 s after it was emptied): "spent" goes, nothing else.
    reset();
    expect(await metered.pruneIdleFlowKeys(T + 2001)).toEqual({ pruned: 1 });
    // The deleted row and the prune's cursor.
    console.log(`prune of 1 idle key row among 4: ${rowsWritten()} rows written`);
    expect(await pruneAll(T + 2001)).toBe(0);
    const flow = await store().readQueueFlow(queue, 100, T + 2001);
    expect(flow.keys.map((k) => [k.key, k.paused]).sort()).toEqual([
      ["held", true],
      ["live", false],
    ]);

    // A lease after the prune takes the bucket as full: its burst, as before the prune.
    await enqueueMany(queue, [{ key: "spent" }, { key: "spent" }, { key: "spent" }], T + 3000);
    expect(await lease(queue, T + 3001, 10)).toHaveLength(2);
  });

  it("a queue whose flow config was cleared: its rows go (its own row included) unless paused", async () => {
    const queue = uniqueQueue("flowprune");
    await store().putQueueConfig(
      queue,
      { flow: { fair: true, default: { rate: { count: 5, per: "second" } } } },
      T,
      PROCESSORS,
    );
    await enqueueMany(queue, [{ key: "a" }, { key: "b" }], T);
    const leased = await lease(queue, T + 1, 2);
    await store().completeTasks(
      leased.map((t) => ({ id: t.id, leaseToken: t.leaseToken! })),
      T + 2,
    );
    await store().putQueueConfig(queue, { flow: null }, T + 3, PROCESSORS);
    // Rows of a, b and the queue's own (its cursor and tokens); the first test's rows are not idle at T + 4.
    expect(await pruneAll(T + 4)).toBe(3);
  });
});
