import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { openDb } from "../../../src/db/client";
import { hybridTaskStore } from "../../../src/engine/hybrid/hybrid-store";
import { PROCESSORS, T0, uniqueQueue } from "../../helpers";
import { meteredD1 } from "../../support/metered-d1";
import { expectFiguresFromSlots } from "../packs/pack-state";

// A holder's write of slots leased in this isolate computes from the packs as the lease wrote them
// (src/engine/hybrid/leased-packs.ts): one D1 call, guarded at write time. Whatever changed them since in
// another isolate — a cancel request, a heartbeat, the same ack, a new config — fails that guard, and the
// write is made again from a fresh read: the answer and the stored state are those of a write that read first.

const meter = meteredD1(env.DB);
/** This isolate's served store (its memory of what it leased), and another isolate's on the same database. */
const here = hybridTaskStore(openDb(meter.db));
const there = hybridTaskStore(openDb(meteredD1(env.DB).db));
const plain = (n: number) => Array.from({ length: n }, (_, i) => ({ payload: { i } }));

/** A queue of 10 pack tasks, 3 of them leased here at T0 + 1 (a lease of 30 s). */
async function leasedHere(name: string) {
  const queue = uniqueQueue(name);
  await here.enqueueTasks(queue, plain(10), T0);
  const tasks = await here.leaseTasks({ queue, max: 3, visibilityTimeoutS: 30, holder: "w" }, T0 + 1);
  expect(tasks).toHaveLength(3);
  return { queue, tasks, item: (k: number) => ({ id: tasks[k]!.id, leaseToken: tasks[k]!.leaseToken! }) };
}

/** The D1 calls of `run`, and its answer. */
async function calls<T>(run: () => Promise<T>): Promise<{ calls: number; answer: T }> {
  meter.reset();
  const answer = await run();
  return { calls: meter.usage.calls!, answer };
}

describe("the served store's memory of the packs it leased: guarded, never trusted", () => {
  it("a cancel requested elsewhere since the lease: the complete ends the task cancelled, as after a read", async () => {
    const { queue, item } = await leasedHere("lp-cancel");
    expect((await there.cancelTask(item(0).id, T0 + 2)).state).toBe("processing");
    const done = await calls(() => here.completeTasks([item(0), item(1)], T0 + 3));
    expect(done.answer[0]).toMatchObject({ ok: false, error: { code: "task_cancelled" } });
    expect(done.answer[1]).toMatchObject({ ok: true, state: "completed" });
    // The remembered write's guard failed (nothing written), then the read and the write.
    expect(done.calls).toBe(3);
    expect((await here.getTask(item(0).id))!.state).toBe("cancelled");
    await expectFiguresFromSlots(queue, T0 + 3);
  });

  it("a heartbeat elsewhere since the lease: the complete is applied from a fresh read", async () => {
    const { queue, item } = await leasedHere("lp-beat");
    await there.heartbeatTask({ ...item(2), extendS: 120, progress: 40 }, T0 + 2);
    const done = await calls(() => here.completeTasks([{ ...item(2), result: { ok: 1 } }], T0 + 3));
    expect(done.answer[0]).toMatchObject({ ok: true, state: "completed", repeated: false });
    expect(done.calls).toBe(3);
    const task = (await here.getTask(item(2).id))!;
    expect(task).toMatchObject({ state: "completed", progress: 100 });
    expect(JSON.parse(task.result!)).toEqual({ ok: 1 });
    await expectFiguresFromSlots(queue, T0 + 3);
  });

  it("the same ack made elsewhere first: answered as a repeat, not applied twice", async () => {
    const { item } = await leasedHere("lp-repeat");
    expect((await there.completeTasks([item(1)], T0 + 2))[0]).toMatchObject({ ok: true, repeated: false });
    const again = await calls(() => here.completeTasks([item(1)], T0 + 3));
    expect(again.answer[0]).toMatchObject({ ok: true, state: "completed", repeated: true });
    // The remembered write's guard failed, then the read (a repeat writes nothing).
    expect(again.calls).toBe(2);
  });

  it("a config changed elsewhere since the lease: a failure's retry takes the new backoff", async () => {
    const { queue, item } = await leasedHere("lp-config");
    await there.putQueueConfig(queue, { backoff_base_s: 600, backoff_cap_s: 3600 }, T0 + 2, PROCESSORS);
    const failed = await calls(() => here.failTasks([{ ...item(0), message: "boom" }], T0 + 3));
    expect(failed.answer[0]).toMatchObject({ ok: true, state: "pending" });
    expect(failed.calls).toBe(3);
    // The default backoff retries within seconds; the new one's first step is 600 s, jittered down at most 20 %.
    const runAt = (failed.answer[0] as { run_at: number }).run_at;
    expect(runAt - (T0 + 3)).toBeGreaterThanOrEqual(480_000);
  });

  it("a write scoped to another queue is not judged from memory: the write reads, and answers not_found", async () => {
    const { item } = await leasedHere("lp-scope");
    const other = await calls(() => here.completeTasks([item(0)], T0 + 2, { queue: "lp-scope-other" }));
    expect(other.answer[0]).toMatchObject({ ok: false, error: { code: "not_found" } });
    expect(other.calls).toBe(1);
  });

  it("a lease lapsed as remembered is not judged from memory: the write reads, and answers lease_lost", async () => {
    const { item } = await leasedHere("lp-lapsed");
    const late = await calls(() => here.completeTasks([item(0)], T0 + 1 + 31_000));
    expect(late.answer[0]).toMatchObject({ ok: false, error: { code: "lease_lost" } });
    expect(late.calls).toBe(1);
  });
});

describe("the served store's memory of the packs it leased: bounded", () => {
  it("keeps at most 8 MiB of packs: after nine packs of ~1.1 MB leased, the first is read again, the last is not", async () => {
    const queue = uniqueQueue("lp-bound");
    const big = "x".repeat(110_000);
    for (let p = 0; p < 9; p++) {
      await here.enqueueTasks(
        queue,
        Array.from({ length: 10 }, (_, i) => ({ payload: { p, i, big } })),
        T0 + p,
      );
    }
    const leases: Array<Awaited<ReturnType<typeof here.leaseTasks>>> = [];
    for (let p = 0; p < 9; p++) {
      leases.push(await here.leaseTasks({ queue, max: 10, visibilityTimeoutS: 300, holder: "w" }, T0 + 20));
    }
    expect(leases.map((l) => l.length)).toEqual(Array(9).fill(10));
    const items = (p: number) => leases[p]!.map((t) => ({ id: t.id, leaseToken: t.leaseToken! }));
    const last = await calls(() => here.completeTasks(items(8), T0 + 21));
    expect(last.answer.every((a) => a.ok)).toBe(true);
    expect(last.calls).toBe(1);
    const first = await calls(() => here.completeTasks(items(0), T0 + 21));
    expect(first.answer.every((a) => a.ok)).toBe(true);
    expect(first.calls).toBe(2);
  });
});
