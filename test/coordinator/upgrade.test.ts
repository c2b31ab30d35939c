import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import type { TaskEvent } from "../../src/contracts/events";
import { putSchedule } from "../../src/schedules/schedule-service";
import { getSchedule } from "../../src/schedules/schedule-store";
import { enqueueOne } from "../http/api";
import { db, uniqueQueue } from "../helpers";
import { openStream } from "../events/socket";
import { dropSchedule, tasksOf } from "../schedules/support";
import { coordinator, inObject } from "../support/coordinator";

/**
 * The upgrade from one Coordinator class doing three jobs (queue partition, partition 0's event stream,
 * the "~schedules" object) to one class per job (wrangler.toml migration v2). Coordinator keeps its name,
 * so deployed objects keep their storage and alarms; these tests write the state the old class left in
 * them — exactly the keys it used — and show the new classes take it over with nothing lost.
 */

/** The name the old class fired schedules under, and the storage keys it kept. */
const LEGACY_SCHEDULES_OBJECT = "~schedules";
const LEGACY_SCHEDULES_KEY = "schedules";
const LEGACY_EVENT_SEQ_KEY = "events:seq";

describe("upgrading to one Durable Object class per job", () => {
  it("the old schedules object's alarm hands the job to the Scheduler, which fires what is due", async () => {
    const legacy = coordinator(LEGACY_SCHEDULES_OBJECT);
    const name = uniqueQueue("upgrade-sched");
    const queue = uniqueQueue("upgrade-target");
    // A schedule whose slot came due while the old object's alarm was pending.
    const created = Date.now() - 60_000;
    await putSchedule(db(), name, { queue, cron: "*/10 * * * * *", overlap: "allow" }, created);
    const due = (await getSchedule(db(), name)).next_run_at;
    expect(due).toBeLessThanOrEqual(Date.now());
    await inObject(legacy, async (_o, state) => {
      await state.storage.put(LEGACY_SCHEDULES_KEY, true);
      // Pending (not yet due, so it does not run by itself): the test runs it.
      await state.storage.setAlarm(Date.now() + 60_000);
    });

    // The old alarm fires under the new code: the Scheduler is armed at once (its alarm, due, runs by
    // itself), fires the due slot into the target queue; the flag is gone.
    expect(await runDurableObjectAlarm(legacy)).toBe(true);
    expect(await inObject(legacy, (_o, state) => state.storage.get(LEGACY_SCHEDULES_KEY))).toBeUndefined();
    await vi.waitFor(async () => expect((await tasksOf(queue)).length).toBeGreaterThanOrEqual(1), {
      timeout: 5_000,
      interval: 20,
    });
    const fired = await tasksOf(queue);
    await dropSchedule(name);

    // The old object never fires schedules again: its next alarm is an ordinary (idle) coordinator's.
    await inObject(legacy, (_o, state) => state.storage.setAlarm(Date.now() + 60_000));
    expect(await runDurableObjectAlarm(legacy)).toBe(true);
    expect(await tasksOf(queue)).toHaveLength(fired.length);
  });

  it("the event hub goes on from the seq the old coordinator stored, and the coordinator forgets it", async () => {
    const queue = uniqueQueue("upgrade-ev");
    await inObject(coordinator(queue), (_o, state) => state.storage.put(LEGACY_EVENT_SEQ_KEY, 41));

    // A client that followed the old stream up to 41 resumes from there: no gap, no reuse of a seq.
    const stream = await openStream(`/v1/queues/${queue}/events?after=41`);
    expect(await stream.next((m) => m.event === "hello")).toEqual({ event: "hello", queue, seq: 41 });
    const id = await enqueueOne(queue);
    const [event] = (await stream.taskEvents(1)) as TaskEvent[];
    expect(event).toMatchObject({ event: "enqueued", task_id: id, seq: 42 });
    stream.close();

    expect(await inObject(coordinator(queue), (_o, state) => state.storage.get(LEGACY_EVENT_SEQ_KEY))).toBeUndefined();
    const hub = env.EVENT_HUB.get(env.EVENT_HUB.idFromName(queue));
    expect(await inObject(hub, (_o, state) => state.storage.get(LEGACY_EVENT_SEQ_KEY))).toBe(42);
  });

  it("a queue with no old stream starts at 0 and asks the coordinator only once", async () => {
    const queue = uniqueQueue("upgrade-new");
    const stream = await openStream(`/v1/queues/${queue}/events`);
    expect(await stream.next((m) => m.event === "hello")).toEqual({ event: "hello", queue, seq: 0 });
    stream.close();
    const hub = env.EVENT_HUB.get(env.EVENT_HUB.idFromName(queue));
    // Stored even at 0, so an evicted hub reads it instead of asking again.
    expect(await inObject(hub, (_o, state) => state.storage.get(LEGACY_EVENT_SEQ_KEY))).toBe(0);
  });
});
