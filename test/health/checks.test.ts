import { describe, expect, it } from "vitest";
import { completeTasks } from "../../src/engine/complete";
import { enqueueTasks } from "../../src/engine/enqueue";
import { failTasks } from "../../src/engine/fail";
import { leaseTasks } from "../../src/engine/lease";
import { putQueueConfig } from "../../src/engine/queue-config";
import { evaluateHealth, getHealthConfig, putHealthConfig } from "../../src/health/check-health";
import { DEFAULT_THRESHOLDS } from "../../src/health/thresholds";
import { fireDueSchedules } from "../../src/schedules/fire-schedules";
import { putSchedule } from "../../src/schedules/schedule-service";
import { deleteSchedule } from "../../src/schedules/schedule-store";
import { db, PROCESSORS, T0, uniqueQueue } from "../helpers";
import { storeRefusedSchedule } from "../schedules/support";
import { clockRange } from "../support/clock-range";

async function health(queue: string, now: number) {
  const [h] = await evaluateHealth(db(), now, { queue });
  return h!;
}

const MINUTE = 60_000;

describe("health checks", () => {
  it("is ok for a queue nobody knows, with the default thresholds", async () => {
    const h = await health(uniqueQueue("health"), T0);
    expect(h).toMatchObject({ status: "ok", reasons: [], thresholds: DEFAULT_THRESHOLDS });
  });

  it("judges the failure rate over 5 and 15 minutes and dead tasks over the last hour, from the counters", async () => {
    const queue = uniqueQueue("health");
    await enqueueTasks(
      db(),
      queue,
      Array.from({ length: 10 }, () => ({ maxAttempts: 1 })),
      T0,
    );
    const leased = await leaseTasks(db(), { queue, max: 10, visibilityTimeoutS: 60, holder: "w" }, T0);
    const [failing, passing] = [leased.slice(0, 6), leased.slice(6)];
    await failTasks(
      db(),
      failing.map((t) => ({ id: t.id, leaseToken: t.leaseToken!, message: "x" })),
      T0 + 1000,
    );
    await completeTasks(
      db(),
      passing.map((t) => ({ id: t.id, leaseToken: t.leaseToken! })),
      T0 + 1000,
    );
    const h = await health(queue, T0 + 2000);
    expect(h.figures).toMatchObject({ failure_rate_5m: 0.6, failure_rate_15m: 0.6, outcomes_5m: 10, dead_1h: 6 });
    expect(h.status).toBe("critical");
    expect(h.reasons.map((r) => [r.check, r.status])).toEqual([
      ["failure_rate_5m", "critical"],
      ["failure_rate_15m", "critical"],
      ["dead_1h", "warn"],
    ]);
    // 20 minutes later only the hour's dead count remains; past the hour, nothing.
    expect((await health(queue, T0 + 20 * MINUTE)).reasons.map((r) => r.check)).toEqual(["dead_1h"]);
    expect((await health(queue, T0 + 62 * MINUTE)).status).toBe("ok");
  });

  it("does not judge a failure rate on fewer outcomes than failure_rate_min_outcomes", async () => {
    const queue = uniqueQueue("health");
    await putHealthConfig(db(), queue, { thresholds: { dead_1h: { warn: null, critical: null } } }, T0);
    await enqueueTasks(db(), queue, [{ maxAttempts: 1 }], T0);
    const [task] = await leaseTasks(db(), { queue, max: 1, visibilityTimeoutS: 60, holder: "w" }, T0);
    await failTasks(db(), [{ id: task!.id, leaseToken: task!.leaseToken!, message: "x" }], T0 + 1);
    const h = await health(queue, T0 + 2);
    expect(h.figures.failure_rate_5m).toBeNull();
    expect(h.status).toBe("ok");
  });

  it("warns of tasks past their lease with no heartbeat and of tasks running longer than max_run_s", async () => {
    const queue = uniqueQueue("health");
    await putQueueConfig(db(), queue, { max_run_s: 60 }, T0, PROCESSORS);
    await enqueueTasks(db(), queue, [{}, {}], T0);
    await leaseTasks(db(), { queue, max: 1, visibilityTimeoutS: 5, holder: "w" }, T0);
    await leaseTasks(db(), { queue, max: 1, visibilityTimeoutS: 3600, holder: "w" }, T0);
    expect((await health(queue, T0 + 1000)).status).toBe("ok");
    const h = await health(queue, T0 + 61_000);
    expect(h.figures).toMatchObject({ lease_expired: 1, overrun: 2 });
    expect(h.reasons.map((r) => [r.check, r.status])).toEqual([
      ["lease_expired", "warn"],
      ["overrun", "warn"],
    ]);
  });

  it("judges the oldest due task's age", async () => {
    const queue = uniqueQueue("health");
    await enqueueTasks(db(), queue, [{}], T0);
    expect((await health(queue, T0 + 301_000)).reasons).toEqual([
      expect.objectContaining({ check: "oldest_due_age_s", status: "warn", value: 301, threshold: 300 }),
    ]);
    expect((await health(queue, T0 + 1801_000)).status).toBe("critical");
  });

  it("refuses thresholds with a warn above its critical, naming the field, and stores nothing", async () => {
    const queue = uniqueQueue("health");
    await putHealthConfig(db(), queue, { thresholds: { due_depth: { warn: 5 } } }, T0);
    await expect(
      putHealthConfig(db(), queue, { thresholds: { due_depth: { critical: 3 } }, alert_url: "https://x.example" }, T0),
    ).rejects.toMatchObject({ code: "invalid_request", message: expect.stringMatching(/^thresholds\.due_depth: /) });
    expect(await getHealthConfig(db(), queue)).toEqual({ thresholds: { due_depth: { warn: 5 } }, alert_url: null });
  });

  it("warns of a schedule into the queue whose task was refused, until a firing succeeds", async () => {
    const queue = uniqueQueue("health");
    const name = uniqueQueue("sched");
    // This file's clock range: these passes fire no other test's schedules.
    const base = clockRange("health/checks").day(1);
    await storeRefusedSchedule(name, queue, "@every 60s", base + 60_000, base);
    await fireDueSchedules(db(), base + 60_000);
    const h = await health(queue, base + 61_000);
    expect(h.reasons).toEqual([expect.objectContaining({ check: "schedule_errors", status: "warn", value: 1 })]);
    await putSchedule(db(), name, { queue, cron: "@every 60s", overlap: "allow" }, base + 61_000);
    await fireDueSchedules(db(), base + 120_000);
    expect((await health(queue, base + 121_000)).status).toBe("ok");
    await deleteSchedule(db(), name);
  });
});
