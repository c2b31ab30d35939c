import { describe, expect, it } from "vitest";
import { completeTasks } from "../../src/engine/complete";
import { enqueueTasks } from "../../src/engine/enqueue";
import { extendLeases } from "../../src/engine/extend";
import { releaseTasks } from "../../src/engine/release";
import { queueDb, row, uniqueQueue } from "../helpers";
import { coordinator, holdNextLease, setClock, untilWaiting } from "../support/coordinator";

// A client that stops names its long poll and withdraws it (`withdrawPoll`, behind POST .../lease/withdraw and
// behind request.signal where the platform reports a disconnect). A withdrawal for a poll that does not
// exist changes nothing; one that races a delivery leaves the task with the live client or pending, never
// lost and never leased twice. The races are held open with deferred promises.

function poll(queue: string, waiterId: string, holder = waiterId) {
  return coordinator(queue).lease({ queue, max: 1, visibilityTimeoutS: 60, holder, waitMs: 15_000, waiterId });
}

async function enqueueOne(queue: string, now: number): Promise<string> {
  const { tasks } = await enqueueTasks(await queueDb(queue), queue, [{ payload: { n: 1 } }], now);
  return tasks[0]!.id;
}

describe("withdrawing a long poll (withdrawPoll)", () => {
  it("answers a waiting poll with nothing at once; a later task stays pending", async () => {
    const queue = uniqueQueue("wd");
    const waiting = poll(queue, "w-1");
    await untilWaiting(queue, 1);
    expect(await coordinator(queue).withdrawPoll({ waiterId: "w-1" })).toBe(true);
    expect(await waiting).toEqual([]);
    expect(await coordinator(queue).waiting()).toBe(0);
    const id = await enqueueOne(queue, Date.now());
    await coordinator(queue).notify({ queue, runAt: Date.now() });
    expect(await row(id)).toMatchObject({ state: "pending", attempts: 0 });
  });

  it("a name no poll has is a no-op — and the poll, if it arrives after its own withdrawal, is answered at once", async () => {
    const queue = uniqueQueue("wd-unknown");
    expect(await coordinator(queue).withdrawPoll({ waiterId: "never-sent" })).toBe(false);
    const id = await enqueueOne(queue, Date.now() - 1000);
    // The withdrawal overtook its poll: the poll leases nothing and does not park.
    expect(await poll(queue, "never-sent")).toEqual([]);
    expect(await coordinator(queue).waiting()).toBe(0);
    expect(await row(id)).toMatchObject({ state: "pending", attempts: 0 });
    // Other names are unaffected.
    expect((await poll(queue, "other")).map((t) => t.id)).toEqual([id]);
  });

  it("racing a lease in flight for the poll: the poll gets nothing, the task goes to the next poll, leased once", async () => {
    const queue = uniqueQueue("wd-race");
    const t0 = Date.now();
    await setClock(queue, t0);
    const live = poll(queue, "live");
    await untilWaiting(queue, 1);
    const stopping = poll(queue, "stopping"); // the newest: served first
    await untilWaiting(queue, 2);
    const held = await holdNextLease(queue, { when: "after" });

    const id = await enqueueOne(queue, t0);
    const notified = coordinator(queue).notify({ queue, runAt: t0 });
    await held.entered; // the task is leased for "stopping" ...
    expect(await row(id)).toMatchObject({ state: "processing", leaseHolder: "stopping" });
    const stoppingToken = (await row(id)).leaseToken!;
    expect(await coordinator(queue).withdrawPoll({ waiterId: "stopping" })).toBe(true); // ... as it withdraws
    held.land();
    await notified;

    expect(await stopping).toEqual([]);
    const [toLive] = await live;
    expect(toLive).toMatchObject({ id, leaseHolder: "live", attempts: 1 });
    expect(toLive!.leaseToken).not.toBe(stoppingToken);
    // Leased once: the withdrawn poll's token is void.
    const db = await queueDb(queue);
    const [late] = await completeTasks(db, [{ id, leaseToken: stoppingToken }], t0 + 1);
    expect(late).toMatchObject({ ok: false, error: { code: "lease_lost" } });
    const [done] = await completeTasks(db, [{ id, leaseToken: toLive!.leaseToken! }], t0 + 2);
    expect(done).toMatchObject({ ok: true, state: "completed" });
  });

  it("racing a lease in flight with nobody else waiting: the task is pending again at once, attempt refunded", async () => {
    const queue = uniqueQueue("wd-race-alone");
    const t0 = Date.now();
    await setClock(queue, t0);
    const stopping = poll(queue, "stopping");
    await untilWaiting(queue, 1);
    const held = await holdNextLease(queue, { when: "after" });
    const id = await enqueueOne(queue, t0);
    const notified = coordinator(queue).notify({ queue, runAt: t0 });
    await held.entered;
    expect(await coordinator(queue).withdrawPoll({ waiterId: "stopping" })).toBe(true);
    held.land();
    await notified;
    expect(await stopping).toEqual([]);
    expect(await row(id)).toMatchObject({ state: "pending", attempts: 0, leaseToken: null, claimBy: null });
  });

  it("arriving just after the poll was answered: an unclaimed hand-out is taken back, yet the client's release of it answers ok; a claimed one stays with its client", async () => {
    const queue = uniqueQueue("wd-after");
    const t0 = Date.now();
    await setClock(queue, t0);
    const a = poll(queue, "a");
    await untilWaiting(queue, 1);
    const first = await enqueueOne(queue, t0);
    await coordinator(queue).notify({ queue, runAt: t0 });
    const [toA] = await a;
    expect(toA!.id).toBe(first);
    // The answer is on its way to a client that is stopping: withdrawn before it claimed. Taken back: its
    // claim window ends now (leasable at once), under the same token while nobody else leases it.
    expect(await coordinator(queue).withdrawPoll({ waiterId: "a" })).toBe(true);
    expect(await row(first)).toMatchObject({
      state: "processing",
      attempts: 1,
      leaseToken: toA!.leaseToken,
      claimBy: t0,
    });
    // The client reads the answer and releases the task, as the docs ask: accepted (issue 28, item 6).
    const [released] = await releaseTasks(await queueDb(queue), [{ id: first, leaseToken: toA!.leaseToken! }], t0 + 1);
    expect(released).toMatchObject({ ok: true, state: "pending" });
    expect(await row(first)).toMatchObject({ state: "pending", attempts: 0, leaseToken: null });

    // The same race, but the client claimed first (a claim is one round trip after the answer).
    const other = uniqueQueue("wd-after-claimed");
    await setClock(other, t0);
    const b = poll(other, "b");
    await untilWaiting(other, 1);
    const second = await enqueueOne(other, t0);
    await coordinator(other).notify({ queue: other, runAt: t0 });
    const [toB] = await b;
    const [claimed] = await extendLeases(await queueDb(other), [{ id: second, leaseToken: toB!.leaseToken! }], t0 + 5);
    expect(claimed).toMatchObject({ ok: true });
    // Claimed first: the client has it (a stopping worker releases it itself), so the withdrawal leaves it.
    await coordinator(other).withdrawPoll({ waiterId: "b" });
    expect(await row(second)).toMatchObject({ state: "processing", leaseToken: toB!.leaseToken, claimBy: null });
  });

  it("racing the poll's own first lease: what it took is released (releaseClaimed), the poll answers nothing, leased once", async () => {
    const queue = uniqueQueue("wd-first");
    const t0 = Date.now();
    await setClock(queue, t0);
    const id = await enqueueOne(queue, t0 - 1);
    const held = await holdNextLease(queue, { which: "first", when: "after" });
    const polled = poll(queue, "early");
    await held.entered; // leased on arrival, before the poll could park ...
    expect(await row(id)).toMatchObject({ state: "processing", leaseHolder: "early", claimBy: null });
    const token = (await row(id)).leaseToken!;
    // ... as its withdrawal arrives: no wait to find yet, so it is remembered.
    expect(await coordinator(queue).withdrawPoll({ waiterId: "early" })).toBe(false);
    held.land();
    expect(await polled).toEqual([]);
    expect(await row(id)).toMatchObject({ state: "pending", attempts: 0, leaseToken: null });
    const [late] = await completeTasks(await queueDb(queue), [{ id, leaseToken: token }], t0 + 1);
    expect(late).toMatchObject({ ok: false, error: { code: "lease_lost" } });
  });

  it("arriving after the answer while another poll waits: the hand-out goes to that poll at once, and the stopping client's release is refused — leased once", async () => {
    const queue = uniqueQueue("wd-after-waiting");
    const t0 = Date.now();
    await setClock(queue, t0);
    const other = poll(queue, "other");
    await untilWaiting(queue, 1);
    const stopping = poll(queue, "stopping"); // the newest: served first
    await untilWaiting(queue, 2);
    const id = await enqueueOne(queue, t0);
    await coordinator(queue).notify({ queue, runAt: t0 });
    const [toStopping] = await stopping;
    expect(toStopping!.id).toBe(id);

    expect(await coordinator(queue).withdrawPoll({ waiterId: "stopping" })).toBe(true);
    // Taken back and served to the poll that waited, which holds it now (attempt refunded, then counted once).
    const [toOther] = await other;
    expect(toOther).toMatchObject({ id, leaseHolder: "other", attempts: 1 });
    const db = await queueDb(queue);
    const [released] = await releaseTasks(db, [{ id, leaseToken: toStopping!.leaseToken! }], t0 + 1);
    expect(released).toMatchObject({ ok: false, error: { code: "lease_lost" } });
    const [done] = await completeTasks(db, [{ id, leaseToken: toOther!.leaseToken! }], t0 + 2);
    expect(done).toMatchObject({ ok: true, state: "completed" });
  });
});
