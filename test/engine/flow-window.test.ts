import { expect, it } from "vitest";
import { keyWindow, NOT_DUE_KEYS_PASSED } from "../../src/engine/flow-lease";
import { PROCESSORS, T0, uniqueQueue } from "../helpers";
import { storeFixtures } from "./conformance/fixtures";
import { describeStore } from "./conformance/store-kinds";

// A flow lease looks at a window of keys from its cursor (docs/flow-control.md, "Keys first"). Keys with
// nothing due yet (only delayed tasks) must not fill that window: a due key behind them is leased by the same
// lease. Times: this file's own range, from T0 + 11 days.
const T = T0 + 11 * 86_400_000;
const HOUR = 3_600_000;

describeStore("flow control: keys with nothing due do not fill a lease's key window", (kind) => {
  const { store, enqueueMany, lease } = storeFixtures(kind);

  /** A flow queue whose keys `a0000`… each hold a task due in an hour (at two priorities when `priorities`
   * is 2), and key `z` one task due now: z sorts after every delayed key. */
  async function queueBehindDelayedKeys(delayedKeys: number, priorities = 1) {
    const queue = uniqueQueue("flowwin");
    await store().putQueueConfig(queue, { flow: { fair: true, default: { concurrency: 2 } } }, T, PROCESSORS);
    const delayed = Array.from({ length: delayedKeys * priorities }, (_, i) => ({
      key: `a${String(i % delayedKeys).padStart(4, "0")}`,
      runAt: T + HOUR,
      priority: i < delayedKeys ? 0 : 5,
    }));
    for (let i = 0; i < delayed.length; i += 500) await enqueueMany(queue, delayed.slice(i, i + 500), T);
    const [due] = await enqueueMany(queue, [{ key: "z" }], T);
    return { queue, due: due! };
  }

  it("a due key behind more delayed keys than the window is leased by this lease", async () => {
    // keyWindow(1) = 16 keys; 40 delayed keys lie between the cursor (the start) and z.
    const { queue, due } = await queueBehindDelayedKeys(2.5 * keyWindow(1));
    const leased = await lease(queue, T + 1, 1);
    expect(leased.map((t) => t.id)).toEqual([due]);
  });

  it("delayed keys at several priorities are passed over too", async () => {
    const { queue, due } = await queueBehindDelayedKeys(2.5 * keyWindow(1), 2);
    const leased = await lease(queue, T + 1, 1);
    expect(leased.map((t) => t.id)).toEqual([due]);
  });

  it("the walk wraps round past the cursor: a due key before it, delayed keys after it, leased by this lease", async () => {
    const queue = uniqueQueue("flowwin");
    await store().putQueueConfig(queue, { flow: { fair: true } }, T, PROCESSORS);
    await enqueueMany(queue, [{ key: "m" }], T);
    expect(await lease(queue, T + 1, 1)).toHaveLength(1); // the cursor is now at m
    await enqueueMany(
      queue,
      Array.from({ length: 40 }, (_, i) => ({ key: `n${String(i).padStart(2, "0")}`, runAt: T + HOUR })),
      T + 2,
    );
    const [due] = await enqueueMany(queue, [{ key: "b" }], T + 2);
    const leased = await lease(queue, T + 3, 1);
    expect(leased.map((t) => t.id)).toEqual([due]);
  });

  it(`behind more than ${NOT_DUE_KEYS_PASSED} delayed keys, the next lease goes on from where this one stopped`, async () => {
    // The bound: a lease passes at most NOT_DUE_KEYS_PASSED keys with nothing due (a few index seeks each);
    // the cursor moves past them, so a due key behind N of them is leased within ⌈N / NOT_DUE_KEYS_PASSED⌉ + 1
    // leases. Here N is 1.5 × the bound: the first lease comes back empty, the second leases z.
    const { queue, due } = await queueBehindDelayedKeys(1.5 * NOT_DUE_KEYS_PASSED);
    const { store: metered, rowsRead, reset } = kind.measure();
    reset();
    expect(await metered.leaseTasks({ queue, max: 1, visibilityTimeoutS: 30, holder: "w" }, T + 1)).toEqual([]);
    // What passing the keys costs: ~11 rows read per key passed (its seeks and the walk's own reads of it).
    console.log(`a lease of 1 passing ${NOT_DUE_KEYS_PASSED} delayed keys: ${rowsRead()} rows read`);
    expect(rowsRead()).toBeLessThan(15 * NOT_DUE_KEYS_PASSED);
    const leased = await lease(queue, T + 2, 1);
    expect(leased.map((t) => t.id)).toEqual([due]);
  });
});
