import { expect, it } from "vitest";
import type { FlowConfig } from "../../src/contracts/flow";
import { PROCESSORS, T0, uniqueQueue } from "../helpers";
import { storeFixtures, VT_MS } from "./conformance/fixtures";
import { describeStore } from "./conformance/store-kinds";

// Flow control's concurrency per key (docs/flow-control.md): never exceeded under concurrent leasers and
// lapsed leases, never leaking — the running count is the tasks', and a lapsed lease frees its slot.
// Times: this file's own range, from T0 + 5 days.
const T = T0 + 5 * 86_400_000;

describeStore("flow control: concurrency per key", (kind) => {
  const { store, enqueueMany, lease } = storeFixtures(kind);

  async function flowQueue(flow: FlowConfig): Promise<string> {
    const queue = uniqueQueue("flowc");
    await store().putQueueConfig(queue, { flow }, T, PROCESSORS);
    return queue;
  }

  /** Tasks of each key processing under a live lease, from the port's own read. */
  async function runningByKey(queue: string, now: number): Promise<Map<string, number>> {
    const { keys } = await store().readQueueFlow(queue, 100, now);
    return new Map(keys.map((k) => [k.key, k.running]));
  }

  it("a key's limit holds for one lease and across leases; other keys and unkeyed tasks still flow", async () => {
    const queue = await flowQueue({ default: { concurrency: 2 }, keys: { big: { concurrency: 5 } } });
    await enqueueMany(
      queue,
      [
        ...Array.from({ length: 10 }, () => ({ key: "a" })),
        ...Array.from({ length: 10 }, () => ({ key: "big" })),
        ...Array.from({ length: 3 }, () => ({})),
      ],
      T,
    );
    const first = await lease(queue, T + 1, 100);
    const count = (ts: { flowKey: string | null }[], k: string | null) => ts.filter((t) => t.flowKey === k).length;
    expect(count(first, "a")).toBe(2);
    expect(count(first, "big")).toBe(5);
    expect(count(first, null)).toBe(3);
    expect(await lease(queue, T + 2, 100)).toEqual([]);
    // One of a's completes: one slot, one more of a's.
    const a = first.find((t) => t.flowKey === "a")!;
    await store().completeTasks([{ id: a.id, leaseToken: a.leaseToken! }], T + 3);
    const next = await lease(queue, T + 4, 100);
    expect(next.map((t) => t.flowKey)).toEqual(["a"]);
  });

  it("32 concurrent leasers never exceed a key's limit, over rounds where half the leases lapse", async () => {
    const queue = await flowQueue({ default: { concurrency: 3 } });
    const keys = ["k1", "k2", "k3", "k4"];
    await enqueueMany(
      queue,
      Array.from({ length: 80 }, (_, i) => ({ key: keys[i % 4] })),
      T,
    );
    const seen = new Set<string>();
    let now = T + 10;
    for (let round = 0; round < 10; round++) {
      const batches = await Promise.all(
        Array.from({ length: 32 }, (_, w) =>
          store().leaseTasks({ queue, max: 2, visibilityTimeoutS: 30, holder: `w${w}` }, now),
        ),
      );
      const leased = batches.flat();
      // Never two holders at once (a lapsed lease is taken over only after its expiry), never a finished task.
      expect(new Set(leased.map((t) => t.id)).size).toBe(leased.length);
      for (const t of leased) expect(seen.has(t.id)).toBe(false);
      const running = await runningByKey(queue, now);
      for (const k of keys) expect(running.get(k) ?? 0).toBeLessThanOrEqual(3);
      expect(leased.length).toBeLessThanOrEqual(12);
      // Finish half of them; the rest lapse (never acked) and must free their slots at their expiry.
      const toFinish = leased.filter((_, i) => i % 2 === 0);
      await store().completeTasks(
        toFinish.map((t) => ({ id: t.id, leaseToken: t.leaseToken! })),
        now + 1,
      );
      for (const t of toFinish) seen.add(t.id);
      now += VT_MS + 1;
    }
    // After the soak: each key's running count is what is actually processing under a live lease.
    const { tasks } = await store().listTasks(queue, { limit: 100 });
    const live = tasks.filter((t) => t.state === "processing" && t.leaseExpiresAt! > now);
    const running = await runningByKey(queue, now);
    for (const k of keys) expect(running.get(k) ?? 0).toBe(live.filter((t) => t.flowKey === k).length);
  });

  it("a lapsed lease frees its key's slot the moment its holder's writes are refused", async () => {
    const queue = await flowQueue({ default: { concurrency: 1 } });
    await enqueueMany(queue, [{ key: "solo" }, { key: "solo" }], T);
    const [first] = await lease(queue, T + 100, 10);
    expect(first).toBeDefined();
    expect(await lease(queue, T + 100 + VT_MS - 1, 10)).toEqual([]);
    const after = await lease(queue, T + 100 + VT_MS, 10);
    expect(after).toHaveLength(1);
    expect(after[0]!.id).not.toBe(first!.id);
    // The lapsed holder cannot write: one slot, one writer.
    const [late] = await store().completeTasks([{ id: first!.id, leaseToken: first!.leaseToken! }], T + 100 + VT_MS);
    expect(late).toMatchObject({ ok: false });
  });

  it("a lowered limit lets running tasks finish and hands out nothing more until below it", async () => {
    const queue = await flowQueue({ default: { concurrency: 4 } });
    await enqueueMany(
      queue,
      Array.from({ length: 8 }, () => ({ key: "x" })),
      T,
    );
    const running = await lease(queue, T + 1, 100);
    expect(running).toHaveLength(4);
    await store().putQueueConfig(queue, { flow: { default: { concurrency: 2 } } }, T + 2, PROCESSORS);
    expect(await lease(queue, T + 3, 100)).toEqual([]);
    const outcomes = await store().completeTasks(
      running.slice(0, 2).map((t) => ({ id: t.id, leaseToken: t.leaseToken! })),
      T + 4,
    );
    expect(outcomes.every((o) => o.ok)).toBe(true);
    expect(await lease(queue, T + 5, 100)).toEqual([]);
    await store().completeTasks(
      running.slice(2, 3).map((t) => ({ id: t.id, leaseToken: t.leaseToken! })),
      T + 6,
    );
    expect(await lease(queue, T + 7, 100)).toHaveLength(1);
  });
});
