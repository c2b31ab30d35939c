import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { openDb } from "../../../src/db/client";
import { hybridTaskStore } from "../../../src/engine/hybrid/hybrid-store";
import { ackThenLeaseInTurn } from "../../../src/engine/ack-then-lease";
import { ulid } from "ulid";
import type { AckOutcome, LeasedAnswer } from "../../../src/engine/store";
import { T0, uniqueQueue } from "../../helpers";
import { meteredD1 } from "../../support/metered-d1";
import { expectFiguresFromSlots } from "../packs/pack-state";

// The served store's ack that carries the next lease (hybrid-store.ts `ackThenLease`): where this isolate
// leased every item and the queue's packs came first here, the completions computed from memory and the hinted
// lease go in ONE D1 batch. What a caller sees is the calls' answer (test/engine/ack-then-lease.test.ts);
// here: the one call, and that a batch whose guard fails takes nothing — its lease included.

const meter = meteredD1(env.DB);
/** This isolate's served store, and another isolate's on the same database. */
const here = hybridTaskStore(openDb(meter.db));
const there = hybridTaskStore(openDb(meteredD1(env.DB).db));
const plain = (n: number) => Array.from({ length: n }, (_, i) => ({ payload: { i } }));
const request = (queue: string, max: number) => ({ queue, max, visibilityTimeoutS: 30, holder: "w" });
const items = (tasks: Array<{ id: string; leaseToken: string | null }>) =>
  tasks.map((t) => ({ id: t.id, leaseToken: t.leaseToken! }));
const codes = (outcomes: AckOutcome[]) => outcomes.map((o) => (o.ok ? o.state : o.error.code));

/** The D1 calls of `run`, and its answer. */
async function calls<T>(run: () => Promise<T>): Promise<{ calls: number; answer: T }> {
  meter.reset();
  const answer = await run();
  return { calls: meter.usage.calls!, answer };
}

/** A queue of `n` pack tasks, the first 3 leased here (so its packs-first hint and the packs are remembered). */
async function leasedHere(name: string, n = 10) {
  const queue = uniqueQueue(name);
  await here.enqueueTasks(queue, plain(n), T0);
  const held = await here.leaseTasks(request(queue, 3), T0 + 1);
  expect(held).toHaveLength(3);
  return { queue, held: items(held) };
}

async function countsOf(queue: string, now: number) {
  return (await here.queueStats(queue, {}, now)).counts;
}

describe("the served store's ack carrying the next lease", () => {
  it("is one D1 call where this isolate leased the tasks, and again for the tasks that call leased", async () => {
    const { queue, held } = await leasedHere("cl-one");
    const first = await calls(() => here.ackThenLease({ complete: held }, request(queue, 3), T0 + 2));
    expect(first.calls).toBe(1);
    expect(codes(first.answer.outcomes)).toEqual(["completed", "completed", "completed"]);
    expect(first.answer.leased).toHaveLength(3);
    // The lease rode the completion's batch and its packs are remembered: the next carry is one call too.
    const second = await calls(() =>
      here.ackThenLease({ complete: items(first.answer.leased) }, request(queue, 10), T0 + 3),
    );
    expect(second.calls).toBe(1);
    expect(codes(second.answer.outcomes)).toEqual(["completed", "completed", "completed"]);
    expect(second.answer.leased).toHaveLength(4);
    expect(await countsOf(queue, T0 + 3)).toMatchObject({ completed: 6, processing: 4, pending: 0 });
    await expectFiguresFromSlots(queue, T0 + 3);
  });

  it("a cancel requested elsewhere: the guard fails the batch, its lease takes nothing, and both are made again", async () => {
    const { queue, held } = await leasedHere("cl-cancel");
    expect((await there.cancelTask(held[0]!.id, T0 + 2)).state).toBe("processing");
    const carried = await calls(() => here.ackThenLease({ complete: held }, request(queue, 3), T0 + 3));
    expect(codes(carried.answer.outcomes)).toEqual(["task_cancelled", "completed", "completed"]);
    // The failed batch, the read and the write, the lease.
    expect(carried.calls).toBe(4);
    // Had the failed batch's lease taken its 3, they would be processing beside the 3 the next lease took.
    expect(carried.answer.leased).toHaveLength(3);
    expect(await countsOf(queue, T0 + 3)).toMatchObject({ cancelled: 1, completed: 2, processing: 3, pending: 4 });
    await expectFiguresFromSlots(queue, T0 + 3);
  });

  it("tasks leased in another isolate, or a row task among them: the two calls, with the same answer", async () => {
    const { queue, held } = await leasedHere("cl-elsewhere");
    const fromThere = await calls(() => there.ackThenLease({ complete: held.slice(0, 2) }, request(queue, 2), T0 + 2));
    expect(codes(fromThere.answer.outcomes)).toEqual(["completed", "completed"]);
    expect(fromThere.answer.leased).toHaveLength(2);
    const [row] = (await here.enqueueTasks(queue, [{ payload: "row", priority: 9 }], T0 + 2)).tasks;
    const [rowLeased] = await here.leaseTasks(request(queue, 1), T0 + 3);
    expect(rowLeased!.id).toBe(row!.id);
    const mixed = await here.ackThenLease({ complete: [held[2]!, ...items([rowLeased!])] }, request(queue, 10), T0 + 4);
    expect(codes(mixed.outcomes)).toEqual(["completed", "completed"]);
    expect(mixed.leased).toHaveLength(5);
    expect(await countsOf(queue, T0 + 4)).toMatchObject({ completed: 4, processing: 7, pending: 0 });
  });

  it("completions, failures and releases of pack tasks leased here: one batch for the three kinds and the lease", async () => {
    /** Acks of each kind on a queue of 4 pack tasks, 3 of them leased here, carrying a lease of 10. */
    const ackAll = async (name: string, how: typeof here.ackThenLease) => {
      const { queue, held } = await leasedHere(name, 4);
      const acks = {
        complete: [{ ...held[0]!, result: { ok: 1 } }],
        fail: [{ ...held[1]!, message: "again", retryAfterS: 0 }],
        release: [held[2]!],
      };
      return { queue, held, ...(await calls(() => how(acks, request(queue, 10), T0 + 2))) };
    };
    const apart = await ackAll("cl-kinds-turn", (acks, r, now) => ackThenLeaseInTurn(here, acks, r, now));
    const carried = await ackAll("cl-kinds", here.ackThenLease);
    // The three kinds' own batches are gone: they and the lease's first statements are one batch. (A retry due and
    // a release are slots the SQL lease leaves to the rules: the lease takes them after, in calls of its own.)
    expect(carried.calls).toBe(apart.calls - 3);
    for (const { answer, held, queue } of [apart, carried]) {
      expect(codes(answer.outcomes)).toEqual(["completed", "pending", "pending"]);
      // The one never leased, the failed one due again at once and the released one.
      const leasedIds = answer.leased.map((t) => t.id);
      expect(leasedIds).toHaveLength(3);
      expect(leasedIds).toEqual(expect.arrayContaining([held[1]!.id, held[2]!.id]));
      expect(await countsOf(queue, T0 + 2)).toMatchObject({ completed: 1, processing: 3, pending: 0 });
      await expectFiguresFromSlots(queue, T0 + 2);
    }
  });

  it("an item that cannot be stored fails alone: the others and the lease go on in the one batch", async () => {
    const { queue, held } = await leasedHere("cl-problem");
    const carried = await calls(() =>
      here.ackThenLease(
        {
          complete: [{ ...held[0]!, result: "\ud800" }, held[1]!],
          fail: [{ ...held[2]!, message: "\ud800" }],
        },
        request(queue, 2),
        T0 + 2,
      ),
    );
    expect(codes(carried.answer.outcomes)).toEqual(["invalid_request", "completed", "invalid_request"]);
    expect(carried.calls).toBe(1);
    expect(carried.answer.leased).toHaveLength(2);
    expect((await here.getTask(held[0]!.id)).state).toBe("processing");
    expect((await here.getTask(held[2]!.id)).state).toBe("processing");
    expect(await countsOf(queue, T0 + 2)).toMatchObject({ completed: 1, processing: 4, pending: 5 });
  });

  it("two isolates burning a queue down with carried leases complete every task once, none leased twice", async () => {
    const queue = uniqueQueue("cl-race");
    await here.enqueueTasks(queue, plain(100), T0);
    await here.enqueueTasks(queue, plain(100), T0);
    const completed: string[] = [];
    async function burn(store: typeof here, now: number) {
      let held: LeasedAnswer[] | Array<{ id: string; leaseToken: string | null }> = await store.leaseTasks(
        request(queue, 7),
        now,
      );
      while (held.length > 0) {
        const { outcomes, leased } = await store.ackThenLease({ complete: items(held) }, request(queue, 7), ++now);
        for (const o of outcomes) {
          expect(o).toMatchObject({ ok: true, state: "completed", repeated: false });
          completed.push(o.id);
        }
        held = leased;
      }
    }
    await Promise.all([burn(here, T0 + 1), burn(there, T0 + 1)]);
    expect(completed).toHaveLength(200);
    expect(new Set(completed).size).toBe(200);
    expect(await countsOf(queue, T0 + 500)).toMatchObject({ completed: 200, processing: 0, pending: 0 });
    await expectFiguresFromSlots(queue, T0 + 500);
  });

  it("row tasks on a queue of rows: the row store's complete with the lease's first batch riding it, a call fewer", async () => {
    /** A queue of 4 row tasks (calls of one task, each with an id no pack slot is named by), 2 leased here. */
    async function rowsLeased(name: string) {
      const queue = uniqueQueue(name);
      for (let k = 0; k < 4; k++) {
        await here.enqueueTasks(queue, [{ id: ulid(T0 + k).slice(0, 24) + "ZZ", payload: { k }, priority: 9 - k }], T0);
      }
      const held = await here.leaseTasks(request(queue, 2), T0 + 1);
      expect(held).toHaveLength(2);
      return { queue, held: items(held) };
    }
    const inTurn = await rowsLeased("cl-rows-turn");
    const apart = await calls(() =>
      ackThenLeaseInTurn(here, { complete: inTurn.held }, request(inTurn.queue, 2), T0 + 2),
    );
    const carried = await rowsLeased("cl-rows");
    const together = await calls(() =>
      here.ackThenLease({ complete: carried.held }, request(carried.queue, 2), T0 + 2),
    );
    expect(together.calls).toBe(apart.calls - 1);
    for (const { answer } of [apart, together]) {
      expect(codes(answer.outcomes)).toEqual(["completed", "completed"]);
      expect(answer.leased).toHaveLength(2);
    }
    expect(await countsOf(carried.queue, T0 + 2)).toMatchObject({ completed: 2, processing: 2, pending: 0 });
    // A refused item among them changes nothing, and the lease that rode the batch still takes what is due.
    const [third, fourth] = items(together.answer.leased);
    const mixed = await here.ackThenLease(
      { complete: [third!, { ...fourth!, leaseToken: "0".repeat(32) }] },
      request(carried.queue, 5),
      T0 + 3,
    );
    expect(codes(mixed.outcomes)).toEqual(["completed", "lease_lost"]);
    expect(mixed.leased).toEqual([]);
    expect(await countsOf(carried.queue, T0 + 3)).toMatchObject({ completed: 3, processing: 1 });
  });
});
