import { describe, expect, it } from "vitest";
import { completeTasks } from "../../src/engine/complete";
import { leaseTasks } from "../../src/engine/lease";
import { MAX_CATCH_UP_SLOTS } from "../../src/contracts/limits";
import { fireDueSchedules } from "../../src/schedules/fire-schedules";
import { putSchedule } from "../../src/schedules/schedule-service";
import { getSchedule } from "../../src/schedules/schedule-store";
import { slotTaskId } from "../../src/schedules/slot-id";
import { db, row, T0, uniqueQueue } from "../helpers";
import { dropSchedule, fireAt, fireEachSlot, storeRefusedSchedule, tasksOf } from "./support";

const iso = (ms: number) => new Date(ms).toISOString();

describe("schedule firing", () => {
  it("fires @every 30s once per slot, with the task id derived from (schedule, slot)", async () => {
    const name = uniqueQueue("sched");
    const queue = uniqueQueue();
    await putSchedule(db(), name, { queue, cron: "@every 30s", overlap: "allow", task: { type: "pass" } }, T0 + 1);
    expect((await getSchedule(db(), name)).next_run_at).toBe(T0 + 30_000);
    expect(await fireAt(name, T0 + 29_999)).toBeUndefined();
    // Two passes racing over one slot, and a third repeating it: one task.
    await Promise.all([fireDueSchedules(db(), T0 + 30_000), fireDueSchedules(db(), T0 + 30_000)]);
    await fireDueSchedules(db(), T0 + 30_000);
    const tasks = await tasksOf(queue);
    expect(tasks).toEqual([{ id: await slotTaskId(name, T0 + 30_000), state: "pending" }]);
    expect((await getSchedule(db(), name)).next_run_at).toBe(T0 + 60_000);
    expect(await fireEachSlot(name, 3)).toEqual([T0 + 60_000, T0 + 90_000, T0 + 120_000]);
    expect(await tasksOf(queue)).toHaveLength(4);
    await dropSchedule(name);
  });

  it("follows the zone's clock across DST: a spring-forward day fires once after the gap, a fall-back day once", async () => {
    const name = uniqueQueue("sched");
    const queue = uniqueQueue();
    // 02:30 in Berlin does not exist on 2026-03-29 (02:00 -> 03:00) and happens twice on 2026-10-25.
    await putSchedule(
      db(),
      name,
      { queue, cron: "0 30 2 * * *", timezone: "Europe/Berlin", overlap: "allow" },
      Date.parse("2026-03-27T12:00:00Z"),
    );
    expect((await fireEachSlot(name, 4)).map(iso)).toEqual([
      "2026-03-28T01:30:00.000Z", // 02:30 CET
      "2026-03-29T01:00:00.000Z", // the gap: 03:00 CEST, the first time after it
      "2026-03-30T00:30:00.000Z", // 02:30 CEST
      "2026-03-31T00:30:00.000Z",
    ]);
    await putSchedule(
      db(),
      name,
      { queue, cron: "0 30 2 * * *", timezone: "Europe/Berlin", overlap: "allow" },
      Date.parse("2026-10-23T12:00:00Z"),
    );
    expect((await fireEachSlot(name, 3)).map(iso)).toEqual([
      "2026-10-24T00:30:00.000Z", // 02:30 CEST
      "2026-10-25T00:30:00.000Z", // 02:30 happens twice (CEST, then CET): fired once
      "2026-10-26T01:30:00.000Z", // 02:30 CET
    ]);
    expect(await tasksOf(queue)).toHaveLength(7);
    await dropSchedule(name);
  });

  it("gives each slot's task the template's start deadline, from the slot it fired at", async () => {
    const name = uniqueQueue("sched");
    const queue = uniqueQueue();
    await putSchedule(db(), name, { queue, cron: "@every 30s", overlap: "allow", task: { expires_in_s: 20 } }, T0 + 1);
    await fireAt(name, T0 + 30_000);
    const [task] = await tasksOf(queue);
    expect((await row(task!.id)).startBy).toBe(T0 + 50_000);
    await dropSchedule(name);
  });

  it("fires seconds-resolution cron within the slot: */5 * * * * *", async () => {
    const name = uniqueQueue("sched");
    const queue = uniqueQueue();
    await putSchedule(db(), name, { queue, cron: "*/5 * * * * *", overlap: "allow" }, T0 + 1_000);
    expect(await fireEachSlot(name, 3)).toEqual([T0 + 5_000, T0 + 10_000, T0 + 15_000]);
    await dropSchedule(name);
  });

  describe("catch_up after downtime (slots more than the grace late are missed)", () => {
    // @every 60s from T0; the next pass comes at T0 + 10.5 min: slots T0+1min … T0+10min are due, of which
    // T0+9min and T0+10min are within the 90 s grace (on time) and the eight before are missed.
    const cases = [
      ["none", 2],
      ["last", 3],
      ["all", 10],
    ] as const;
    for (const [catchUp, expected] of cases) {
      it(`${catchUp}: ${expected} tasks`, async () => {
        const name = uniqueQueue("sched");
        const queue = uniqueQueue();
        await putSchedule(db(), name, { queue, cron: "@every 60s", catch_up: catchUp, overlap: "allow" }, T0);
        const report = await fireAt(name, T0 + 630_000);
        expect(report?.enqueued).toHaveLength(expected);
        expect(report?.enqueued.at(-1)?.slot).toBe(T0 + 600_000);
        expect(await tasksOf(queue)).toHaveLength(expected);
        expect((await getSchedule(db(), name)).next_run_at).toBe(T0 + 660_000);
        await dropSchedule(name);
      });
    }

    it(`all is bounded: at most ${MAX_CATCH_UP_SLOTS} missed slots, the latest`, async () => {
      const name = uniqueQueue("sched");
      const queue = uniqueQueue();
      await putSchedule(db(), name, { queue, cron: "@every 1s", catch_up: "all", overlap: "allow" }, T0);
      const report = await fireAt(name, T0 + 86_400_000);
      // The missed ones (at most the bound) and the 91 on-time slots within the 90 s grace.
      expect(report?.enqueued).toHaveLength(MAX_CATCH_UP_SLOTS + 91);
      expect(report?.enqueued.at(-1)?.slot).toBe(T0 + 86_400_000);
      await dropSchedule(name);
    });
  });

  it("skips a slot while the previous slot's task is pending or processing (overlap: skip)", async () => {
    const name = uniqueQueue("sched");
    const queue = uniqueQueue();
    await putSchedule(db(), name, { queue, cron: "@every 30s" }, T0);
    expect((await fireAt(name, T0 + 30_000))?.enqueued).toHaveLength(1);
    const second = await fireAt(name, T0 + 60_000);
    expect(second).toMatchObject({ enqueued: [], skipped: [T0 + 60_000] });
    expect((await getSchedule(db(), name)).last_outcome).toBe("skipped_overlap");
    const [task] = await leaseTasks(db(), { queue, max: 1, visibilityTimeoutS: 60, holder: "w" }, T0 + 61_000);
    expect((await fireAt(name, T0 + 90_000))?.enqueued).toHaveLength(0); // processing: still skipped
    await completeTasks(db(), [{ id: task!.id, leaseToken: task!.leaseToken! }], T0 + 95_000);
    expect((await fireAt(name, T0 + 120_000))?.enqueued).toEqual([
      { slot: T0 + 120_000, id: await slotTaskId(name, T0 + 120_000) },
    ]);
    await dropSchedule(name);
  });

  it("records a task its queue refuses on the schedule and moves on, without looping", async () => {
    const name = uniqueQueue("sched");
    const queue = uniqueQueue();
    await storeRefusedSchedule(name, queue, "@every 30s", T0 + 30_000, T0);
    const report = await fireAt(name, T0 + 30_000);
    expect(report?.error).toMatch(/limit/);
    const row = await getSchedule(db(), name);
    expect(row).toMatchObject({ last_outcome: "error", next_run_at: T0 + 60_000 });
    expect(row.last_error).toMatch(/limit/);
    expect(await tasksOf(queue)).toEqual([]);
    await dropSchedule(name);
  });
});
