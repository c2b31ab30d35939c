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

  /** Prunes a whole pass of the table (other files' rows too, in a shared database) and answers the keys of
   * `queue` it deleted. */
  async function pruneAll(queue: string, now: number): Promise<string[]> {
    const keys: string[] = [];
    for (let i = 0; i < 20; i++) {
      keys.push(...(await store().pruneIdleFlowKeys(now)).keys.filter((k) => k.queue === queue).map((k) => k.key));
    }
    return keys.sort();
  }

  it("a rate-limited key's row is kept while its bucket refills, and pruned once full with no live task; pauses and live keys stay", async () => {
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
    expect(await pruneAll(queue, T + 1000)).toEqual([]);

    // Full again (2 s after it was emptied): "spent" goes, nothing else.
    expect(await pruneAll(queue, T + 2001)).toEqual(["spent"]);
    expect(await pruneAll(queue, T + 2001)).toEqual([]);
    const flow = await store().readQueueFlow(queue, 100, T + 2001);
    expect(flow.keys.map((k) => [k.key, k.paused]).sort()).toEqual([
      ["held", true],
      ["live", false],
    ]);

    // A lease after the prune takes the bucket as full: its burst, as before the prune.
    await enqueueMany(queue, [{ key: "spent" }, { key: "spent" }, { key: "spent" }], T + 3000);
    expect(await lease(queue, T + 3001, 10)).toHaveLength(2);
  });

  it("a prune that deletes one row writes 2 rows (the row and its cursor)", async () => {
    const { store: metered, rowsWritten, reset } = kind.measure();
    const queue = uniqueQueue("flowprune");
    await store().setFlowPaused(queue, "k", true, T);
    await store().setFlowPaused(queue, "k", false, T);
    // Other rows of a shared database may go in the same pass: count the writes of a pass that finds only this.
    await pruneAll("-", T);
    await store().setFlowPaused(queue, "k", true, T);
    await store().setFlowPaused(queue, "k", false, T);
    reset();
    let found = false;
    for (let i = 0; i < 20 && !found; i++) found = (await metered.pruneIdleFlowKeys(T)).keys.some((k) => k.key === "k");
    expect(found).toBe(true);
    console.log(`prune pass deleting one idle key row: ${rowsWritten()} rows written`);
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
    // Rows of a, b and the queue's own (its cursor and tokens).
    expect(await pruneAll(queue, T + 4)).toEqual(["", "a", "b"]);
  });
});
