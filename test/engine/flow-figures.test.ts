import { expect, it } from "vitest";
import { OTHER_KEYS } from "../../src/contracts/flow-figures";
import { STARVED_KEYS_SCAN } from "../../src/engine/flow-starved";
import { PROCESSORS, T0, uniqueQueue } from "../helpers";
import { storeFixtures } from "./conformance/fixtures";
import { describeStore } from "./conformance/store-kinds";

// What /metrics and health read of flow control (FlowControl.flowFigures, starvedKeys): a queue's busiest
// keys with the rest summed, the queues paused whole, and a key starved though nothing stops its next task.
// Times: this file's own, a day after T0 (reads here are by queue).
const T = T0 + 86_400_000;

describeStore("flow control: figures for metrics and health", (kind) => {
  const { store, enqueueMany, lease } = storeFixtures(kind);

  async function flowQueue(): Promise<string> {
    const queue = uniqueQueue("flowfig");
    await store().putQueueConfig(queue, { flow: {} }, T, PROCESSORS);
    return queue;
  }

  it("answers each queue's top keys by due then running, the rest summed, and the queues paused whole", async () => {
    const queue = await flowQueue();
    await enqueueMany(queue, [{ key: "a" }, { key: "a" }, { key: "a" }, { key: "b" }, { key: "b" }, { key: "c" }], T);
    // A task of b's running: b is due 1, running 1 (in lease order, b's second task stays due behind a's).
    await enqueueMany(queue, [{ key: "b", priority: 9 }], T);
    expect(await lease(queue, T + 1, 1)).toMatchObject([{ flowKey: "b" }]);
    const mine = async (top: number) => (await store().flowFigures(T + 2, top)).keys.filter((k) => k.queue === queue);
    expect(await mine(1)).toEqual([
      { queue, key: "a", due: 3, running: 0 },
      { queue, key: OTHER_KEYS, due: 3, running: 1 },
    ]);
    expect(await mine(3)).toEqual([
      { queue, key: "a", due: 3, running: 0 },
      { queue, key: "b", due: 2, running: 1 },
      { queue, key: "c", due: 1, running: 0 },
    ]);
    expect((await store().flowFigures(T + 2, 3)).pausedQueues).not.toContain(queue);
    await store().setFlowPaused(queue, null, true, T + 3);
    expect((await store().flowFigures(T + 4, 3)).pausedQueues).toContain(queue);
  });

  it("names a key starved with when its next task became due; not once a task of it runs, nor in a paused queue", async () => {
    const queue = await flowQueue();
    await enqueueMany(
      queue,
      [
        { key: "k", runAt: T + 10 },
        { key: "k", runAt: T + 20 },
      ],
      T,
    );
    expect(await store().starvedKeys(T + 5, queue)).toEqual([]);
    expect(await store().starvedKeys(T + 30, queue)).toEqual([{ queue, key: "k", dueSince: T + 10 }]);
    expect(await lease(queue, T + 31, 1)).toHaveLength(1);
    expect(await store().starvedKeys(T + 32, queue)).toEqual([]);

    const paused = await flowQueue();
    await enqueueMany(paused, [{ key: "k", runAt: T + 10 }], T);
    await store().setFlowPaused(paused, null, true, T + 1);
    expect(await store().starvedKeys(T + 30, paused)).toEqual([]);
  });

  it("the tick's advanceStarvedKeys looks at every key in its turn: a starved key past the first window is found", async () => {
    const queue = await flowQueue();
    // A window's worth of keys sorting before it, none of them due.
    const later = Array.from({ length: STARVED_KEYS_SCAN }, (_, i) => ({
      key: `a${String(i).padStart(4, "0")}`,
      runAt: T + 86_400_000,
    }));
    await enqueueMany(queue, [...later, { key: "zz", runAt: T + 10 }], T);
    expect(await store().starvedKeys(T + 30, queue)).toEqual([]); // the first window only
    const found: unknown[] = [];
    for (let call = 0; call < 3 && found.length === 0; call++) {
      found.push(...(await store().advanceStarvedKeys(T + 30 + call)).filter((k) => k.queue === queue));
    }
    expect(found).toEqual([{ queue, key: "zz", dueSince: T + 10 }]);
    // Remembered: the next read sees it too, until it runs.
    expect(await store().starvedKeys(T + 40, queue)).toEqual([{ queue, key: "zz", dueSince: T + 10 }]);
  });
});
