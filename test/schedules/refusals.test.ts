import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { LATEST_ALARM_AT, MAX_PAYLOAD_BYTES } from "../../src/contracts/limits";
import { NEVER, upsertSchedule } from "../../src/schedules/schedule-store";
import { call, expectError } from "../http/api";
import { db, uniqueQueue } from "../helpers";
import { dropSchedule } from "./support";

interface View {
  name: string;
  paused: boolean;
  next_run_at: string | null;
  next_runs: string[];
}

/** The JSON of a payload that is `bytes` long once serialised. */
const blob = (bytes: number) => "x".repeat(bytes - 2);

/** Whether schedule `name` is stored at all (read in D1, not through the route under test). */
const stored = async (name: string) => (await db().all(sql`SELECT name FROM schedules WHERE name = ${name}`)).length;

describe("a schedule that could never run is refused at PUT", () => {
  // No date matches: February has no 30th or 31st, April no 31st.
  for (const cron of ["0 0 30 2 *", "0 0 31 2 *", "0 0 31 4 *"]) {
    it(`refuses cron "${cron}" with 400 naming cron, and stores nothing`, async () => {
      const name = uniqueQueue("never");
      const res = await call("PUT", `/v1/schedules/${name}`, { body: { queue: uniqueQueue(), cron } });
      expectError(res, 400, "invalid_request", /^cron: .*matches no date.*never fire/);
      expectError(await call("GET", `/v1/schedules/${name}`), 404, "not_found");
      expect(await stored(name)).toBe(0);
    });
  }

  it("refuses a task payload over the enqueue limit with enqueue's 413, naming task.payload, and stores nothing", async () => {
    const name = uniqueQueue("big");
    const body = { queue: uniqueQueue(), cron: "0 3 * * *", task: { payload: blob(MAX_PAYLOAD_BYTES + 1) } };
    expectError(
      await call("PUT", `/v1/schedules/${name}`, { body }),
      413,
      "payload_too_large",
      new RegExp(`^task\\.payload is ${MAX_PAYLOAD_BYTES + 1} bytes.*limit is ${MAX_PAYLOAD_BYTES} bytes`),
    );
    expectError(await call("GET", `/v1/schedules/${name}`), 404, "not_found");
    expect(await stored(name)).toBe(0);
  });

  it("accepts a task payload of exactly the limit, and its task enqueues", async () => {
    const name = uniqueQueue("big");
    const queue = uniqueQueue();
    const body = { queue, cron: "0 3 * * *", paused: true, task: { payload: blob(MAX_PAYLOAD_BYTES) } };
    expect((await call("PUT", `/v1/schedules/${name}`, { body })).status).toBe(200);
    const trigger = await call<{ task: { id: string } }>("POST", `/v1/schedules/${name}/trigger`);
    expect(trigger.status, trigger.text).toBe(200);
    await dropSchedule(name);
  });
});

describe("a 'never' slot never reaches setAlarm", () => {
  /** A Scheduler object of this test's own (same class, its own storage and alarm). */
  const ownScheduler = () => env.SCHEDULER.get(env.SCHEDULER.idFromName(uniqueQueue("scheduler")));
  const alarmOf = (stub: ReturnType<typeof ownScheduler>) =>
    runInDurableObject(stub, (_instance, state) => state.storage.getAlarm());

  it("arms nothing for a time past the alarm limit, and keeps an earlier alarm", async () => {
    const stub = ownScheduler();
    await stub.arm({ at: NEVER });
    await stub.arm({ at: LATEST_ALARM_AT + 1 });
    expect(await alarmOf(stub)).toBeNull();

    const at = Date.parse("2100-01-01T00:00:00Z");
    await stub.arm({ at });
    await stub.arm({ at: NEVER });
    expect(await alarmOf(stub)).toBe(at);
    await runInDurableObject(stub, (_instance, state) => state.storage.deleteAlarm());
  });

  it("resumes a schedule stored before this check with no future slot: 200, no next run, nothing armed", async () => {
    // What the PUT stored before it refused such a cron: next_run_at NEVER.
    const name = uniqueQueue("legacy");
    const input = { queue: uniqueQueue(), cron: "0 0 30 2 *", timezone: "UTC", task: {} } as const;
    await upsertSchedule(db(), name, { ...input, overlap: "skip", catch_up: "none", paused: true }, NEVER, Date.now());
    const resumed = await call<View>("POST", `/v1/schedules/${name}/resume`);
    expect(resumed.status, resumed.text).toBe(200);
    expect(resumed.body).toMatchObject({ paused: false, next_run_at: null, next_runs: [] });
    expect((await call<View>("GET", `/v1/schedules/${name}`)).body).toMatchObject({ next_run_at: null });
    await dropSchedule(name);
  });
});
