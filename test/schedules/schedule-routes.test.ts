import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { call, expectError, getTask } from "../http/api";
import { db, uniqueQueue } from "../helpers";

interface View {
  name: string;
  paused: boolean;
  next_run_at: string | null;
  next_runs: string[];
  last_run: { task_id: string; task_state: string } | null;
}

describe("schedules over HTTP", () => {
  it("PUT, GET, list, pause, resume, trigger and DELETE a schedule", async () => {
    const name = uniqueQueue("sched");
    const queue = uniqueQueue();
    const put = await call<View>("PUT", `/v1/schedules/${name}`, {
      body: {
        queue,
        cron: "0 0 3 * * *",
        timezone: "America/New_York",
        task: { type: "scan", payload: { deep: true } },
      },
    });
    expect(put.status, put.text).toBe(200);
    expect(put.body).toMatchObject({ name, paused: false, last_run: null });
    expect(put.body.next_runs).toHaveLength(5);
    // 03:00 New York is 07:00 or 08:00 UTC depending on DST.
    for (const run of put.body.next_runs) expect(run).toMatch(/T0[78]:00:00\.000Z$/);
    expect(put.body.next_run_at).toBe(put.body.next_runs[0]);

    expect((await call<View>("GET", `/v1/schedules/${name}`)).body).toEqual(put.body);
    const list = await call<{ schedules: View[] }>("GET", "/v1/schedules");
    expect(list.body.schedules.map((s) => s.name)).toContain(name);

    const paused = await call<View>("POST", `/v1/schedules/${name}/pause`);
    expect(paused.body).toMatchObject({ paused: true, next_run_at: null, next_runs: [] });
    const resumed = await call<View>("POST", `/v1/schedules/${name}/resume`);
    expect(resumed.body).toMatchObject({ paused: false, next_run_at: put.body.next_run_at });

    const trigger = await call<{ task: { id: string; deduplicated: boolean } }>(
      "POST",
      `/v1/schedules/${name}/trigger`,
    );
    expect(trigger.status, trigger.text).toBe(200);
    expect(await getTask(trigger.body.task.id)).toMatchObject({ queue, type: "scan", payload: { deep: true } });
    expect((await call<View>("GET", `/v1/schedules/${name}`)).body.last_run).toMatchObject({
      task_id: trigger.body.task.id,
      task_state: "pending",
    });

    expect((await call("DELETE", `/v1/schedules/${name}`)).status).toBe(200);
    expectError(await call("GET", `/v1/schedules/${name}`), 404, "not_found");
    expectError(await call("DELETE", `/v1/schedules/${name}`), 404, "not_found");
  });

  it("refuses a bad cron, zone, name or field with 400 naming it, and stores nothing", async () => {
    const name = uniqueQueue("sched");
    const cases: Array<[string, unknown, RegExp]> = [
      [name, { queue: "q", cron: "61 * * * *" }, /^cron: .*minute/],
      [name, { queue: "q", cron: "* * *" }, /^cron: expected 5 fields/],
      [name, { queue: "q", cron: "@every 0s" }, /^cron: @every/],
      [name, { queue: "q", cron: "@every often" }, /^cron: @every/],
      [name, { queue: "q", cron: "* * * * *", timezone: "Mars/Olympus" }, /^timezone: /],
      [name, { queue: "q", cron: "* * * * *", overlap: "never" }, /overlap/],
      [name, { queue: "q", cron: "* * * * *", catch_up: "some" }, /catch_up/],
      [name, { queue: "not a queue", cron: "* * * * *" }, /queue/],
      [name, { queue: "q", cron: "* * * * *", task: { priority: "high" } }, /task\.priority/],
      [name, { queue: "q", cron: "* * * * *", extra: 1 }, /extra/],
      ["bad name!", { queue: "q", cron: "* * * * *" }, /name/],
    ];
    for (const [n, body, message] of cases) {
      expectError(
        await call("PUT", `/v1/schedules/${encodeURIComponent(n)}`, { body }),
        400,
        "invalid_request",
        message,
      );
    }
    expect(await db().all(sql`SELECT name FROM schedules WHERE name = ${name}`)).toEqual([]);
  });
});
