import { runDurableObjectAlarm } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { CLAIM_WINDOW_S, CONTESTED_CLAIM_S } from "../../src/contracts/limits";
import { completeTasks } from "../../src/engine/complete";
import { enqueueTasks } from "../../src/engine/enqueue";
import { extendLeases } from "../../src/engine/extend";
import { queueDb, row, uniqueQueue } from "../helpers";
import { alarmOf, coordinator, setClock, untilWaiting } from "../support/coordinator";

// Polls whose clients hung up stay parked wherever the platform does not report the hang-up (wrangler dev,
// docs/api.md "Long polls"). These tests show what keeps them from holding new tasks: the newest poll is
// served first, and a hand-out left unclaimed while another poll waits is taken back after
// CONTESTED_CLAIM_S. The coordinator's clock is injected (`setClock`); alarms are run by hand.

const CLAIM_MS = CLAIM_WINDOW_S * 1000;
const CONTESTED_MS = CONTESTED_CLAIM_S * 1000;

/** A long poll as the lease route makes it, waiting up to 15 s (a real timer: far beyond each test). */
function poll(queue: string, holder: string) {
  return coordinator(queue).lease({ queue, max: 1, visibilityTimeoutS: 60, holder, waitMs: 15_000 });
}

async function enqueueAndNotify(queue: string, now: number): Promise<string> {
  const { tasks } = await enqueueTasks(await queueDb(queue), queue, [{ payload: { n: 1 } }], now);
  await coordinator(queue).notify({ queue, runAt: now });
  return tasks[0]!.id;
}

describe("long polls whose clients hung up", () => {
  it("a new task goes to the newest poll: a live client polling again comes before polls parked earlier", async () => {
    const queue = uniqueQueue("newest");
    const t0 = Date.now();
    await setClock(queue, t0);
    const goneA = poll(queue, "gone-a");
    await untilWaiting(queue, 1);
    const goneB = poll(queue, "gone-b");
    await untilWaiting(queue, 2);
    const live = poll(queue, "live");
    await untilWaiting(queue, 3);

    const id = await enqueueAndNotify(queue, t0);
    const [task] = await live;
    expect(task).toMatchObject({ id, leaseHolder: "live", attempts: 1 });
    expect(await coordinator(queue).waiting()).toBe(2);

    // Leave nothing parked for the next test file's isolate: later tasks go to the two that are left.
    const more = await Promise.all([enqueueAndNotify(queue, t0), enqueueAndNotify(queue, t0)]);
    const handed = (await Promise.all([goneA, goneB])).flat().map((t) => t.id);
    expect(handed.sort()).toEqual(more.sort());
  });

  it("a hand-out left unclaimed while another poll waits is taken back after CONTESTED_CLAIM_S and served to it", async () => {
    const queue = uniqueQueue("contested");
    const t0 = Date.now();
    await setClock(queue, t0);
    // The live client's poll parked first; then two polls whose clients hang up: they are the newest.
    const live = poll(queue, "live");
    await untilWaiting(queue, 1);
    const goneA = poll(queue, "gone-a");
    await untilWaiting(queue, 2);
    const goneB = poll(queue, "gone-b");
    await untilWaiting(queue, 3);

    const id = await enqueueAndNotify(queue, t0);
    const [toB] = await goneB;
    expect(toB).toMatchObject({ id, leaseHolder: "gone-b", claimBy: t0 + CLAIM_MS });
    // Two polls still wait: the alarm is set for the moment B's hand-out is contested, not B's whole window.
    expect(await alarmOf(queue)).toBe(t0 + CONTESTED_MS);

    await setClock(queue, t0 + CONTESTED_MS);
    expect(await runDurableObjectAlarm(coordinator(queue))).toBe(true);
    const [toA] = await goneA; // the newest of those left
    expect(toA).toMatchObject({ id, leaseHolder: "gone-a", attempts: 1, claimBy: t0 + CONTESTED_MS + CLAIM_MS });
    expect(await alarmOf(queue)).toBe(t0 + 2 * CONTESTED_MS);

    await setClock(queue, t0 + 2 * CONTESTED_MS);
    expect(await runDurableObjectAlarm(coordinator(queue))).toBe(true);
    const [toLive] = await live;
    expect(toLive).toMatchObject({ id, leaseHolder: "live", attempts: 1, errors: "[]" });
    expect(await row(id)).toMatchObject({ state: "processing", leaseToken: toLive!.leaseToken, attempts: 1 });

    // The gone clients' tokens are void: a late write by either is refused; the live client's counts.
    const db = await queueDb(queue);
    const late = await completeTasks(
      db,
      [toA, toB].map((t) => ({ id, leaseToken: t!.leaseToken! })),
      t0 + 2 * CONTESTED_MS + 1,
    );
    expect(late.map((o) => o.ok)).toEqual([false, false]);
    const [done] = await completeTasks(db, [{ id, leaseToken: toLive!.leaseToken! }], t0 + 2 * CONTESTED_MS + 2);
    expect(done).toMatchObject({ ok: true, state: "completed" });
  });

  it("never takes back a hand-out its client claimed, however many polls wait", async () => {
    const queue = uniqueQueue("claimed");
    const t0 = Date.now();
    await setClock(queue, t0);
    const first = poll(queue, "first");
    await untilWaiting(queue, 1);
    const id = await enqueueAndNotify(queue, t0);
    const [task] = await first;
    const other = poll(queue, "other");
    await untilWaiting(queue, 1);
    // Claimed within the contested time: endClaimWindows finds nothing to take.
    const [claimed] = await extendLeases(
      await queueDb(queue),
      [{ id, leaseToken: task!.leaseToken!, visibilityTimeoutS: 60 }],
      t0 + CONTESTED_MS - 1,
    );
    expect(claimed).toMatchObject({ ok: true });
    await setClock(queue, t0 + CONTESTED_MS);
    await runDurableObjectAlarm(coordinator(queue));
    expect(await coordinator(queue).waiting()).toBe(1);
    expect(await row(id)).toMatchObject({ state: "processing", leaseToken: task!.leaseToken, claimBy: null });

    const next = await enqueueAndNotify(queue, t0 + CONTESTED_MS);
    expect((await other).map((t) => t.id)).toEqual([next]);
  });

  it("with nobody else waiting a hand-out keeps its whole claim window; a poll arriving later takes it back at once", async () => {
    const queue = uniqueQueue("alone");
    const t0 = Date.now();
    await setClock(queue, t0);
    const first = poll(queue, "slow");
    await untilWaiting(queue, 1);
    const id = await enqueueAndNotify(queue, t0);
    const [task] = await first;
    expect(task!.claimBy).toBe(t0 + CLAIM_MS);
    expect(await alarmOf(queue)).toBeNull(); // nobody waits: no reason to hurry the claim

    // A slow client may claim late while nobody else wants the task.
    await setClock(queue, t0 + 3 * CONTESTED_MS);
    // Then a poll arrives: the hand-out has been unclaimed past CONTESTED_CLAIM_S, so it is taken back for it.
    const [toNewcomer] = await poll(queue, "newcomer");
    expect(toNewcomer).toMatchObject({ id, leaseHolder: "newcomer", attempts: 1 });
    expect(await coordinator(queue).waiting()).toBe(0);
  });
});
