import { runDurableObjectAlarm } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { CLAIM_WINDOW_S, CONTESTED_CLAIM_S } from "../../src/contracts/limits";
import { completeTasks } from "../../src/engine/complete";
import { enqueueTasks } from "../../src/engine/enqueue";
import { DEFAULT_QUEUE_CONFIG } from "../../src/engine/queue-config";
import { reapExpiredLeases } from "../../src/engine/reap";
import { queueDb, row, uniqueQueue } from "../helpers";
import { coordinator, holdNextLease, setClock, untilAlarm, untilWaiting } from "../support/coordinator";

// Issue 28, item 7: ending a claim window only ends a hand-out's claim window — the task is leasable, and stays its
// holder's until another lease takes it — so a live client that is slow to make its first call loses the task
// only to a poll that actually leased it; ending contested claim windows takes only what waiting polls ask for; and a
// poll whose hang-up is reported holds its hand-out for the whole lease. The clock is injected, the waiting
// poll's lease held in flight with a deferred promise, alarms run by hand.

const CLAIM_MS = CLAIM_WINDOW_S * 1000;
const CONTESTED_MS = CONTESTED_CLAIM_S * 1000;
const VISIBILITY_S = 60;

/** A long poll as the lease route makes it, waiting up to 15 s (a real timer: far beyond each test). */
function poll(queue: string, waiterId: string, opts: { max?: number; hangUpReported?: boolean } = {}) {
  return coordinator(queue).lease({
    queue,
    max: opts.max ?? 1,
    visibilityTimeoutS: VISIBILITY_S,
    holder: waiterId,
    waitMs: 15_000,
    waiterId,
    hangUpReported: opts.hangUpReported,
  });
}

async function enqueueAndNotify(queue: string, now: number, count = 1): Promise<string[]> {
  const { tasks } = await enqueueTasks(
    await queueDb(queue),
    queue,
    Array.from({ length: count }, (_, n) => ({ payload: { n } })),
    now,
  );
  await coordinator(queue).notify({ queue, runAt: now });
  return tasks.map((t) => t.id);
}

describe("taking a hand-out back ends its claim window, nothing more", () => {
  it("a hand-out taken back for a waiting poll stays its holder's until that poll leases it: a complete meanwhile counts", async () => {
    const queue = uniqueQueue("tb-slow");
    const t0 = Date.now();
    await setClock(queue, t0);
    const slow = poll(queue, "slow");
    await untilWaiting(queue, 1);
    const [id] = await enqueueAndNotify(queue, t0);
    const [task] = await slow;
    expect(task).toMatchObject({ id, claimBy: t0 + CLAIM_MS });

    // Another poll waits: after CONTESTED_CLAIM_S the hand-out is taken back for it ...
    const other = poll(queue, "other");
    await untilWaiting(queue, 1);
    await untilAlarm(queue, t0 + CONTESTED_MS);
    const held = await holdNextLease(queue, { when: "before" });
    await setClock(queue, t0 + CONTESTED_MS);
    const alarm = runDurableObjectAlarm(coordinator(queue));
    await held.entered;
    // ... taken back: leasable now, but still under the slow client's token ...
    expect(await row(id!)).toMatchObject({
      state: "processing",
      leaseToken: task!.leaseToken,
      claimBy: t0 + CONTESTED_MS,
      attempts: 1,
    });
    // ... whose complete, arriving before the waiting poll's lease, counts: it was working on it.
    const [done] = await completeTasks(
      await queueDb(queue),
      [{ id: id!, leaseToken: task!.leaseToken!, result: "ran once" }],
      t0 + CONTESTED_MS + 1,
    );
    expect(done).toMatchObject({ ok: true, state: "completed" });
    held.land();
    expect(await alarm).toBe(true);
    // The waiting poll found nothing to take and goes on waiting; the task ran once.
    expect(await coordinator(queue).waiting()).toBe(1);
    expect(await row(id!)).toMatchObject({ state: "completed", attempts: 1 });
    await coordinator(queue).withdrawPoll({ waiterId: "other" });
    expect(await other).toEqual([]);
  });

  it("takes back only as many hand-outs as the waiting polls ask for; the others stay with their holders", async () => {
    const queue = uniqueQueue("tb-limit");
    const t0 = Date.now();
    await setClock(queue, t0);
    const first = poll(queue, "first");
    await untilWaiting(queue, 1);
    const second = poll(queue, "second");
    await untilWaiting(queue, 2);
    const ids = await enqueueAndNotify(queue, t0, 2);
    const [toFirst] = await first;
    const [toSecond] = await second;
    expect([toFirst!.id, toSecond!.id].sort()).toEqual([...ids].sort());

    // One poll waits for one task: one hand-out is taken back for it (the first handed out: the newest poll's).
    const waiting = poll(queue, "waiting");
    await untilWaiting(queue, 1);
    await untilAlarm(queue, t0 + CONTESTED_MS);
    await setClock(queue, t0 + CONTESTED_MS);
    expect(await runDurableObjectAlarm(coordinator(queue))).toBe(true);
    const [toWaiting] = await waiting;
    expect(toWaiting).toMatchObject({ id: toSecond!.id, leaseHolder: "waiting", attempts: 1 });
    // The other hand-out was not touched: its claim window runs on, its holder's.
    expect(await row(toFirst!.id)).toMatchObject({
      state: "processing",
      leaseToken: toFirst!.leaseToken,
      claimBy: t0 + CLAIM_MS,
    });

    const db = await queueDb(queue);
    const acks = await completeTasks(
      db,
      [
        { id: toFirst!.id, leaseToken: toFirst!.leaseToken! },
        { id: toSecond!.id, leaseToken: toSecond!.leaseToken! },
      ],
      t0 + CONTESTED_MS + 1,
    );
    // The holder whose task another poll leased is refused; never two holders at once.
    expect(acks.map((a) => (a.ok ? a.state : a.error.code))).toEqual(["completed", "lease_lost"]);
    const [byWaiting] = await completeTasks(
      db,
      [{ id: toWaiting!.id, leaseToken: toWaiting!.leaseToken! }],
      t0 + CONTESTED_MS + 2,
    );
    expect(byWaiting).toMatchObject({ ok: true, state: "completed" });
  });

  it("a poll whose hang-up is reported holds its hand-out for the whole lease: other polls waiting never take it", async () => {
    const queue = uniqueQueue("tb-reported");
    const t0 = Date.now();
    await setClock(queue, t0);
    const watched = poll(queue, "watched", { hangUpReported: true });
    await untilWaiting(queue, 1);
    const [id] = await enqueueAndNotify(queue, t0);
    const [task] = await watched;
    // A plain lease: no claim window, its expiry counts the attempt (a crashing worker's task still dies).
    expect(task).toMatchObject({ id, claimBy: null, leaseExpiresAt: t0 + VISIBILITY_S * 1000 });

    // Another poll waits: no claim window ended at CONTESTED_CLAIM_S; the alarm is for when the lease, expired, is
    // leasable again (its expiry plus the first expiry backoff).
    const other = poll(queue, "other");
    await untilWaiting(queue, 1);
    await untilAlarm(queue, t0 + (VISIBILITY_S + DEFAULT_QUEUE_CONFIG.backoff_base_s) * 1000);
    await setClock(queue, t0 + CLAIM_MS + 5_000);
    expect(await runDurableObjectAlarm(coordinator(queue))).toBe(true);
    expect(await coordinator(queue).waiting()).toBe(1);
    expect(await row(id!)).toMatchObject({ state: "processing", leaseToken: task!.leaseToken });

    // The client never claimed; its complete after 15 s of work counts.
    const [done] = await completeTasks(
      await queueDb(queue),
      [{ id: id!, leaseToken: task!.leaseToken! }],
      t0 + CLAIM_MS + 5_000,
    );
    expect(done).toMatchObject({ ok: true, state: "completed" });
    await coordinator(queue).withdrawPoll({ waiterId: "other" });
    expect(await other).toEqual([]);
  });

  it("a reported poll's task whose worker never acked counts its attempt at expiry, as any lease (no refund)", async () => {
    const queue = uniqueQueue("tb-reported-crash");
    const t0 = Date.now();
    await setClock(queue, t0);
    const watched = poll(queue, "crashing", { hangUpReported: true });
    await untilWaiting(queue, 1);
    const [id] = await enqueueAndNotify(queue, t0);
    expect((await watched)[0]).toMatchObject({ id, attempts: 1, claimBy: null });

    // The worker crashed on it: nothing ever comes back. At the expiry the attempt is spent, so a task that
    // crashes every worker it meets runs out of attempts instead of being refunded forever.
    await reapExpiredLeases(await queueDb(queue), t0 + VISIBILITY_S * 1000 + 1);
    const after = await row(id!);
    expect(after).toMatchObject({ state: "pending", attempts: 1 });
    expect(JSON.parse(after.errors) as Array<{ message: string }>).toEqual([
      expect.objectContaining({ message: expect.stringMatching(/lease expired/) }),
    ]);
  });
});
