import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { runTick } from "../../src/cron/tick";
import { putSchedule } from "../../src/schedules/schedule-service";
import { getSchedule } from "../../src/schedules/schedule-store";
import { SCHEDULER_OBJECT } from "../../src/protocols/durable-objects";
import { follow } from "../../src/effects/follow";
import type { Scheduler } from "../../src/schedules/scheduler";
import { slotTaskId } from "../../src/schedules/slot-id";
import { db, uniqueQueue } from "../helpers";
import { dropSchedule, tasksOf } from "./support";
import { clockRange } from "../support/clock-range";
import { inObject } from "../support/coordinator";

const stub = () => env.SCHEDULER.get(env.SCHEDULER.idFromName(SCHEDULER_OBJECT));

/** Sets the schedules object's clock (fake timers reach neither D1 nor alarms). */
async function setClock(at: number): Promise<void> {
  await inObject(stub(), (instance: Scheduler) => {
    instance.now = () => at;
  });
}

describe("schedules and the Scheduler's alarm", () => {
  it("fires each slot once across a lost alarm (an eviction), re-armed by the cron tick: no gap, no double", async () => {
    // This file's clock range, ahead of every other test's schedules, so passes here fire only this one.
    const base = clockRange("schedules/eviction").start;
    const name = uniqueQueue("sched");
    const queue = uniqueQueue();
    await putSchedule(db(), name, { queue, cron: "*/10 * * * * *", overlap: "allow" }, base);
    await follow(env, { kind: "schedule-set", nextRunAt: base + 10_000 });
    const alarm = () => runInDurableObject(stub(), (_i, state) => state.storage.getAlarm());
    expect(await alarm()).toBeLessThanOrEqual(base + 10_000);

    // Slot 1 by the alarm.
    await setClock(base + 10_000);
    expect(await runDurableObjectAlarm(stub())).toBe(true);
    expect(await alarm()).toBe(base + 20_000);

    // The object is evicted and its alarm lost before slot 2; the cron tick a minute later fires the
    // slots since (within the grace) and re-arms the alarm.
    await runInDurableObject(stub(), (_i, state) => state.storage.deleteAlarm());
    const tick = await runTick(env, base + 60_000);
    expect(tick.scheduled).toBeGreaterThanOrEqual(5);
    expect(await alarm()).toBe(base + 70_000);

    // The alarm's retry of an old slot, and the next slot by the alarm: nothing twice.
    await setClock(base + 70_000);
    expect(await runDurableObjectAlarm(stub())).toBe(true);
    await runTick(env, base + 70_000);

    const slots = Array.from({ length: 7 }, (_, i) => base + (i + 1) * 10_000);
    const ids = await Promise.all(slots.map((slot) => slotTaskId(name, slot)));
    expect((await tasksOf(queue)).map((t) => t.id)).toEqual(ids.sort());
    expect((await getSchedule(db(), name)).next_run_at).toBe(base + 80_000);
    await dropSchedule(name);
    await runInDurableObject(stub(), (_i, state) => state.storage.deleteAlarm());
    // Two cron ticks over the database every test file shares: 1 s alone, 29 s in a full run on 2 cores.
  }, 120_000);
});
