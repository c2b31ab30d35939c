import { runDurableObjectAlarm } from "cloudflare:test";
import { sql } from "drizzle-orm";
import type { QueueCoordinator } from "../../src/coordinator/coordinator";
import { describe, expect, it } from "vitest";
import { enqueueTasks } from "../../src/engine/enqueue";
import { db, row, uniqueQueue } from "../helpers";
import { alarmOf, coordinator, inObject, untilWaiting } from "../support/coordinator";

async function stillPending<T>(promise: Promise<T>, queue: string): Promise<boolean> {
  const marker = Symbol("pending");
  await coordinator(queue).waiting();
  return (await Promise.race([promise, Promise.resolve(marker)])) === marker;
}

/** Makes a delayed task due now by moving its run_at into the past (the DO reads the real clock). */
async function makeDue(id: string): Promise<void> {
  await db().run(sql`UPDATE tasks SET run_at = ${Date.now() - 1000} WHERE id = ${id}`);
}

describe("coordinator alarm", () => {
  it("notify with a future runAt sets the alarm to that time", async () => {
    const queue = uniqueQueue("alarm");
    expect(await alarmOf(queue)).toBeNull();
    const runAt = Date.now() + 60_000;
    await coordinator(queue).notify({ queue, runAt });
    expect(await alarmOf(queue)).toBe(runAt);
  });

  it("notify with a due runAt serves waiters without setting an alarm", async () => {
    const queue = uniqueQueue("alarm");
    const stub = coordinator(queue);
    await stub.notify({ queue, runAt: Date.now() - 1 });
    expect(await alarmOf(queue)).toBeNull();
  });

  it("an earlier notify lowers the alarm; a later one does not raise it", async () => {
    const queue = uniqueQueue("alarm");
    const stub = coordinator(queue);
    const base = Date.now() + 60_000;
    await stub.notify({ queue, runAt: base });
    expect(await alarmOf(queue)).toBe(base);
    await stub.notify({ queue, runAt: base - 20_000 });
    expect(await alarmOf(queue)).toBe(base - 20_000);
    await stub.notify({ queue, runAt: base + 20_000 });
    expect(await alarmOf(queue)).toBe(base - 20_000);
  });

  it("the alarm serves a waiting long-poll once a delayed task is due", async () => {
    const queue = uniqueQueue("alarm");
    const stub = coordinator(queue);
    const runAt = Date.now() + 60_000;
    const { tasks, earliestRunAt } = await enqueueTasks(db(), queue, [{ payload: "later", runAt }], Date.now());
    const id = tasks[0]!.id;
    expect(earliestRunAt).toBe(runAt);

    const pending = stub.lease({ queue, max: 1, visibilityTimeoutS: 30, holder: "sleeper", waitMs: 15_000 });
    await untilWaiting(queue, 1);
    await stub.notify({ queue, runAt });
    expect(await alarmOf(queue)).toBe(runAt);
    // Not due yet: the notification alone hands nothing over.
    expect(await stillPending(pending, queue)).toBe(true);
    expect(await row(id)).toMatchObject({ state: "pending" });

    await makeDue(id);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    const leased = await pending;
    expect(leased.map((t) => t.id)).toEqual([id]);
    expect(await row(id)).toMatchObject({
      state: "processing",
      leaseHolder: "sleeper",
      leaseToken: leased[0]!.leaseToken,
    });
    expect(await stub.waiting()).toBe(0);
    // Nothing else is pending: the alarm is not re-armed.
    expect(await alarmOf(queue)).toBeNull();
  });

  it("re-arms at the next future pending run_at after serving", async () => {
    const queue = uniqueQueue("alarm");
    const stub = coordinator(queue);
    const soon = Date.now() + 60_000;
    const later = Date.now() + 120_000;
    const latest = Date.now() + 180_000;
    const { tasks } = await enqueueTasks(
      db(),
      queue,
      [
        { payload: "soon", runAt: soon },
        { payload: "later", runAt: later },
        { payload: "latest", runAt: latest },
      ],
      Date.now(),
    );
    const [first, second] = tasks.map((t) => t.id);

    const pending = stub.lease({ queue, max: 10, visibilityTimeoutS: 30, holder: null, waitMs: 15_000 });
    await untilWaiting(queue, 1);
    await stub.notify({ queue, runAt: soon });
    expect(await alarmOf(queue)).toBe(soon);

    await makeDue(first!);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect((await pending).map((t) => t.id)).toEqual([first]);
    expect(await alarmOf(queue)).toBe(later);

    // The re-armed alarm fires for the next task in turn, and then for the last one.
    const next = stub.lease({ queue, max: 10, visibilityTimeoutS: 30, holder: null, waitMs: 15_000 });
    await untilWaiting(queue, 1);
    await makeDue(second!);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect((await next).map((t) => t.id)).toEqual([second]);
    expect(await alarmOf(queue)).toBe(latest);
  });

  it("an alarm with no waiter leaves due tasks pending and still re-arms for future ones", async () => {
    const queue = uniqueQueue("alarm");
    const stub = coordinator(queue);
    const soon = Date.now() + 60_000;
    const later = Date.now() + 120_000;
    const { tasks } = await enqueueTasks(db(), queue, [{ runAt: soon }, { runAt: later }], Date.now());
    await stub.notify({ queue, runAt: soon });
    await makeDue(tasks[0]!.id);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(await row(tasks[0]!.id)).toMatchObject({ state: "pending", attempts: 0 });
    expect(await alarmOf(queue)).toBe(later);
  });
});

describe("coordinator alarm racing a notification", () => {
  it("re-arming after an alarm never postpones an earlier alarm a notification set meanwhile", async () => {
    const queue = uniqueQueue("alarm");
    const stub = coordinator(queue);
    const later = Date.now() + 120_000;
    await enqueueTasks(db(), queue, [{ runAt: later }], Date.now());
    // While the alarm handler awaits D1, a notification for an earlier task arrives and sets the alarm to
    // `sooner`; the handler's own query ran before that task was inserted, so it only knows `later`.
    const sooner = Date.now() + 60_000;
    await stub.notify({ queue, runAt: sooner });
    // Inside a running alarm handler, getAlarm() is null unless setAlarm() was called since it started: an
    // alarm that is set here is exactly one set while the handler ran.
    await inObject(stub, (instance: QueueCoordinator) => instance.alarm());
    expect(await alarmOf(queue)).toBe(sooner);
  });
});
