import { runDurableObjectAlarm } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { completeTasks } from "../../src/engine/complete";
import { enqueueTasks } from "../../src/engine/enqueue";
import { extendLeases } from "../../src/engine/extend";
import { leaseTasks } from "../../src/engine/lease";
import { CLAIM_WINDOW_S, CONTESTED_CLAIM_S } from "../../src/contracts/limits";
import { reapExpiredLeases } from "../../src/engine/reap";
import { queueDb, row, uniqueQueue } from "../helpers";
import { alarmOf, coordinator, setClock, untilAlarm, untilWaiting } from "../support/coordinator";

// A long poll answered after it waited may be answering a client that hung up meanwhile (nothing tells
// the Worker reliably). Its lease is provisional: unclaimed within CLAIM_WINDOW_S, the task goes back with
// its attempt refunded. These tests drive the coordinator's clock (`now`) instead of sleeping.

const CLAIM_MS = CLAIM_WINDOW_S * 1000;
const CONTESTED_MS = CONTESTED_CLAIM_S * 1000;

/** A long poll that waits for one task, as the lease route makes it. */
function longPoll(queue: string, holder: string) {
  return coordinator(queue).lease({ queue, max: 1, visibilityTimeoutS: 60, holder, waitMs: 15_000 });
}

async function enqueueAndNotify(queue: string, now: number, maxAttempts = 2): Promise<string> {
  const { tasks } = await enqueueTasks(await queueDb(queue), queue, [{ payload: { n: 1 }, maxAttempts }], now);
  await coordinator(queue).notify({ queue, runAt: now });
  return tasks[0]!.id;
}

describe("provisional leases for long polls answered after a wait", () => {
  it("two clients that hung up while waiting neither make the task dead nor hold it for a visibility timeout", async () => {
    const queue = uniqueQueue("gone");
    const t0 = Date.now();
    await setClock(queue, t0);

    // Client A waits, a task arrives, A is answered — but A had hung up.
    const a = longPoll(queue, "gone-a");
    await untilWaiting(queue, 1);
    const id = await enqueueAndNotify(queue, t0);
    const [toA] = await a;
    expect(toA).toMatchObject({ id, attempts: 1, leaseHolder: "gone-a", claimBy: t0 + CLAIM_MS });
    expect(toA!.leaseExpiresAt).toBe(t0 + 60_000);

    // Client B waits meanwhile: A's hand-out is contested, so the alarm is set for the moment it has been
    // unclaimed for CONTESTED_CLAIM_S; then it is taken back (attempt refunded) and B is served.
    const b = longPoll(queue, "gone-b");
    await untilWaiting(queue, 1);
    await untilAlarm(queue, t0 + CONTESTED_MS);
    const t1 = t0 + CONTESTED_MS;
    await setClock(queue, t1);
    expect(await runDurableObjectAlarm(coordinator(queue))).toBe(true);
    const [toB] = await b;
    // B (also gone) gets it on the same attempt, provisional too; nobody waits now, so B keeps the whole window.
    expect(toB).toMatchObject({ id, attempts: 1, leaseHolder: "gone-b", claimBy: t1 + CLAIM_MS });
    expect(JSON.parse(toB!.errors)).toEqual([]);
    expect(await alarmOf(queue)).toBeNull();

    // A's late write is refused: its lease was taken back.
    const [late] = await completeTasks(await queueDb(queue), [{ id, leaseToken: toA!.leaseToken!, result: 1 }], t1 + 1);
    expect(late).toMatchObject({ ok: false, error: { code: "lease_lost" } });

    // A live worker asks once B's claim lapsed: it gets the task on its first real attempt of two.
    const [live] = await leaseTasks(
      await queueDb(queue),
      { queue, max: 1, visibilityTimeoutS: 60, holder: "live" },
      t1 + CLAIM_MS,
    );
    expect(live).toMatchObject({ id, attempts: 1, leaseHolder: "live", claimBy: null });
    const [done] = await completeTasks(
      await queueDb(queue),
      [{ id, leaseToken: live!.leaseToken!, result: "ok" }],
      t1 + CLAIM_MS + 5,
    );
    expect(done).toMatchObject({ ok: true, state: "completed" });
    expect(await row(id)).toMatchObject({ state: "completed", attempts: 1, errors: "[]" });
  });

  it("a claimed provisional lease is an ordinary lease: kept past the claim window until its expiry", async () => {
    const queue = uniqueQueue("claimed");
    const t0 = Date.now();
    await setClock(queue, t0);
    const waiting = longPoll(queue, "alive");
    await untilWaiting(queue, 1);
    const id = await enqueueAndNotify(queue, t0);
    const [task] = await waiting;
    expect(task!.claimBy).toBe(t0 + CLAIM_MS);

    const [claimed] = await extendLeases(
      await queueDb(queue),
      [{ id, leaseToken: task!.leaseToken!, visibilityTimeoutS: 120 }],
      t0 + 50,
    );
    expect(claimed).toMatchObject({ ok: true, state: "processing", lease_expires_at: t0 + 50 + 120_000 });
    expect(await row(id)).toMatchObject({ claimBy: null, leaseToken: task!.leaseToken, attempts: 1 });

    const later = t0 + CLAIM_MS + 1;
    expect(
      await leaseTasks(await queueDb(queue), { queue, max: 1, visibilityTimeoutS: 60, holder: "thief" }, later),
    ).toEqual([]);
    expect((await reapExpiredLeases(await queueDb(queue), later)).reaped.filter((r) => r.id === id)).toEqual([]);
    const [done] = await completeTasks(
      await queueDb(queue),
      [{ id, leaseToken: task!.leaseToken!, result: 1 }],
      later + 1,
    );
    expect(done).toMatchObject({ ok: true, state: "completed" });
  });

  it("any holder write claims it; past the claim window the lease is leasable, yet its holder's until another lease takes it", async () => {
    const queue = uniqueQueue("window");
    const t0 = Date.now();
    await enqueueTasks(await queueDb(queue), queue, [{}, {}, {}, {}], t0);
    const leased = await leaseTasks(
      await queueDb(queue),
      { queue, max: 4, visibilityTimeoutS: 60, holder: "w", provisional: true },
      t0,
    );
    const [inTime, late, takenOver, gone] = leased;
    expect(leased.map((t) => t.claimBy)).toEqual(leased.map(() => t0 + CLAIM_MS));
    const db = await queueDb(queue);

    // In time: a complete is a claim too.
    const [ok] = await completeTasks(db, [{ id: inTime!.id, leaseToken: inTime!.leaseToken! }], t0 + CLAIM_MS - 1);
    expect(ok).toMatchObject({ ok: true, state: "completed" });

    // Past the window the cron tick leaves the unclaimed leases alone: only their expiry or another lease ends them.
    const tick = t0 + CLAIM_MS + 30_000;
    expect((await reapExpiredLeases(db, tick)).reaped.filter((r) => r.queue === queue)).toEqual([]);
    // A slow client whose first call comes late keeps its task while nobody else leased it.
    const [slow] = await completeTasks(db, [{ id: late!.id, leaseToken: late!.leaseToken! }], tick);
    expect(slow).toMatchObject({ ok: true, state: "completed" });
    expect(await row(late!.id)).toMatchObject({ state: "completed", attempts: 1, errors: "[]" });

    // Another lease takes an unclaimed one over (attempt refunded): then its first holder is refused.
    const [next] = await leaseTasks(db, { queue, max: 1, visibilityTimeoutS: 60, holder: "next" }, tick);
    expect(next).toMatchObject({ id: takenOver!.id, attempts: 1, leaseHolder: "next", claimBy: null });
    const [refused] = await completeTasks(db, [{ id: takenOver!.id, leaseToken: takenOver!.leaseToken! }], tick + 1);
    expect(refused).toMatchObject({ ok: false, error: { code: "lease_lost" } });

    // One nobody ever claimed or took: at its expiry the reaper hands it back due at once, attempt refunded.
    const expiry = t0 + 60_000;
    const { reaped } = await reapExpiredLeases(db, expiry);
    expect(reaped.filter((r) => r.queue === queue)).toEqual([{ id: gone!.id, queue, state: "pending", run_at: t0 }]);
    expect(await row(gone!.id)).toMatchObject({ state: "pending", attempts: 0, errors: "[]", claimBy: null });
  });

  it("a long poll answered at once (tasks already due) gets an ordinary lease", async () => {
    const queue = uniqueQueue("at-once");
    const t0 = Date.now();
    await setClock(queue, t0);
    const { tasks } = await enqueueTasks(await queueDb(queue), queue, [{}], t0 - 1000);
    const [task] = await longPoll(queue, "w");
    expect(task).toMatchObject({ id: tasks[0]!.id, claimBy: null });
  });

  it("a waiter is woken when an expired lease's backoff is due, with no cron tick", async () => {
    const queue = uniqueQueue("expired");
    const t0 = Date.now();
    await setClock(queue, t0);
    const { tasks } = await enqueueTasks(await queueDb(queue), queue, [{}], t0);
    const [crashed] = await leaseTasks(
      await queueDb(queue),
      { queue, max: 1, visibilityTimeoutS: 5, holder: "crashed" },
      t0,
    );
    expect(crashed!.id).toBe(tasks[0]!.id);

    const waiting = longPoll(queue, "next");
    await untilWaiting(queue, 1);
    // Expired at t0 + 5 s; the backoff after a first attempt is the default base, 10 s.
    const due = t0 + 5_000 + 10_000;
    await untilAlarm(queue, due);
    await setClock(queue, due);
    expect(await runDurableObjectAlarm(coordinator(queue))).toBe(true);
    const [task] = await waiting;
    expect(task).toMatchObject({ id: crashed!.id, attempts: 2, leaseHolder: "next" });
    expect(JSON.parse(task!.errors)).toEqual([
      { attempt: 1, at: t0 + 5_000, message: "lease expired", kind: "lease_expired" },
    ]);
  });
});
