import { expect, it } from "vitest";
import type { FlowConfig } from "../../src/contracts/flow";
import { PROCESSORS, T0, uniqueQueue } from "../helpers";
import { storeFixtures } from "./conformance/fixtures";
import { describeStore } from "./conformance/store-kinds";

// Flow control's fair shares and ordered keys (docs/flow-control.md). Times: this file's own range, from
// T0 + 6 days.
const T = T0 + 6 * 86_400_000;

describeStore("flow control: fair shares and ordered keys", (kind) => {
  const { store, enqueueMany, lease } = storeFixtures(kind);

  async function flowQueue(flow: FlowConfig): Promise<string> {
    const queue = uniqueQueue("flows");
    await store().putQueueConfig(queue, { flow }, T, PROCESSORS);
    return queue;
  }

  async function enqueueKeyed(queue: string, key: string, n: number, now: number): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < n; i += 500) {
      ids.push(
        ...(await enqueueMany(
          queue,
          Array.from({ length: Math.min(500, n - i) }, () => ({ key })),
          now,
        )),
      );
    }
    return ids;
  }

  it("fair shares: B's 10 tasks behind A's 3,000 at the same priority are each handed out within 20 leases", async () => {
    const queue = await flowQueue({ fair: true });
    await enqueueKeyed(queue, "A", 3000, T);
    const b = new Set(await enqueueKeyed(queue, "B", 10, T + 1));
    const order: string[] = [];
    for (let i = 0; i < 20; i++) order.push(...(await lease(queue, T + 10 + i, 1)).map((t) => t.id));
    expect(order).toHaveLength(20);
    expect(order.filter((id) => b.has(id))).toHaveLength(10);
    // Without fair shares the same backlog hands A's out first: the property is the config's.
    const plain = await flowQueue({});
    await enqueueKeyed(plain, "A", 100, T);
    await enqueueKeyed(plain, "B", 10, T + 1);
    const first: string[] = [];
    for (let i = 0; i < 20; i++) first.push(...(await lease(plain, T + 10 + i, 1)).map((t) => t.flowKey!));
    expect(first).toEqual(Array.from({ length: 20 }, () => "A"));
  });

  it("fair shares within one lease interleave keys, weighted, at the same priority; priority still first", async () => {
    const queue = await flowQueue({ fair: true, keys: { heavy: { weight: 3 } } });
    await enqueueKeyed(queue, "light", 20, T);
    await enqueueKeyed(queue, "heavy", 20, T);
    const [urgent] = await enqueueMany(queue, [{ key: "light", priority: 5 }], T + 2);
    const leased = await lease(queue, T + 10, 8);
    // Priority first: the urgent one (light's first of its round 0), with heavy's 3 of round 0; then round 1,
    // light's one and heavy's 3.
    expect(leased[0]!.id).toBe(urgent);
    const rest = leased.slice(1).map((t) => t.flowKey);
    expect(rest.filter((k) => k === "heavy")).toHaveLength(6);
    expect(rest.filter((k) => k === "light")).toHaveLength(1);
  });

  it("ordered keys: 5 leasers over 200 tasks of 10 keys — per key, starts in enqueue order and never overlap", async () => {
    const queue = await flowQueue({ default: { ordered: true } });
    const keys = Array.from({ length: 10 }, (_, i) => `k${i}`);
    const enqueued = await enqueueMany(
      queue,
      Array.from({ length: 200 }, (_, i) => ({ key: keys[i % 10], payload: { i } })),
      T,
    );
    const expected = new Map(keys.map((k) => [k, enqueued.filter((_, i) => i % 10 === keys.indexOf(k))]));
    const started = new Map<string, string[]>(keys.map((k) => [k, []]));
    let now = T + 100;
    let done = 0;
    let round = 0;
    while (done < 200 && round++ < 400) {
      const batches = await Promise.all(
        Array.from({ length: 5 }, (_, w) =>
          store().leaseTasks({ queue, max: 4, visibilityTimeoutS: 30, holder: `w${w}` }, now),
        ),
      );
      const leased = batches.flat();
      const perKey = new Map<string, number>();
      for (const t of leased) perKey.set(t.flowKey!, (perKey.get(t.flowKey!) ?? 0) + 1);
      // Never two of one key in flight at once.
      expect([...perKey.values()].every((n) => n === 1)).toBe(true);
      for (const t of leased) started.get(t.flowKey!)!.push(t.id);
      // Every third one fails once (retried later): its key waits for it, FIFO holds across retries.
      const fails = leased.filter((t) => t.attempts === 1 && JSON.parse(t.payload).i % 3 === 0);
      const completes = leased.filter((t) => !fails.includes(t));
      await store().failTasks(
        fails.map((t) => ({ id: t.id, leaseToken: t.leaseToken!, message: "once", retryAfterS: 1 })),
        now + 1,
      );
      const outcomes = await store().completeTasks(
        completes.map((t) => ({ id: t.id, leaseToken: t.leaseToken! })),
        now + 1,
      );
      done += outcomes.filter((o) => o.ok).length;
      now += 2000;
    }
    expect(done).toBe(200);
    for (const k of keys) {
      // Starts in enqueue order: a retried task starts again before the next one.
      const firsts = started.get(k)!.filter((id, i, all) => all.indexOf(id) === i);
      expect(firsts).toEqual(expected.get(k));
      const seq = started.get(k)!;
      for (let i = 1; i < seq.length; i++)
        expect(expected.get(k)!.indexOf(seq[i]!)).toBeGreaterThanOrEqual(expected.get(k)!.indexOf(seq[i - 1]!));
    }
  });
});
