import { describe, expect, it } from "vitest";
import { d1TaskStore } from "../../src/engine/d1-store";
import { evaluateHealth } from "../../src/health/check-health";
import { db, PROCESSORS, T0, uniqueQueue } from "../helpers";

// Health flags a starved key of a flow-controlled queue (docs/flow-control.md, "Starved keys"): due tasks,
// room to start them, nothing running, for longer than starved_key_age_s. Times: T0 + 11 days onwards.
const T = T0 + 11 * 86_400_000;

async function health(queue: string, now: number) {
  const [h] = await evaluateHealth(db(), now, { queue });
  return h!;
}

describe("health: starved keys", () => {
  it("warns of a key passed over by higher-priority work, naming it; not of a paused key, one at its limit or one being worked", async () => {
    const store = d1TaskStore(db());
    const queue = uniqueQueue("starved");
    await store.putQueueConfig(queue, { flow: { keys: { limited: { concurrency: 1 } } } }, T, PROCESSORS);
    await store.enqueueTasks(
      queue,
      [
        ...Array.from({ length: 5 }, () => ({ key: "busy", priority: 5 })),
        ...Array.from({ length: 2 }, () => ({ key: "limited", priority: 5 })),
        { key: "paused" },
        { key: "starved" },
      ],
      T,
    );
    await store.setFlowPaused(queue, "paused", true, T);
    // A lease of 2 takes the higher-priority work only: "busy" and "limited" run, "starved" waits.
    const leased = await store.leaseTasks({ queue, max: 2, visibilityTimeoutS: 3600, holder: "w" }, T + 1);
    expect(new Set(leased.map((t) => t.flowKey))).toEqual(new Set(["busy", "limited"]));

    expect((await health(queue, T + 299_000)).reasons.filter((r) => r.check === "starved_key_age_s")).toEqual([]);
    const h = await health(queue, T + 301_000);
    expect(h.figures).toMatchObject({ starved_key: "starved", starved_key_age_s: 301 });
    expect(h.reasons).toContainEqual(
      expect.objectContaining({
        check: "starved_key_age_s",
        status: "warn",
        value: 301,
        threshold: 300,
        message: expect.stringContaining(`key "starved"`),
      }),
    );

    // Once it runs, it is starved no more.
    await store.putQueueConfig(
      queue,
      { flow: { keys: { busy: { concurrency: 2 }, limited: { concurrency: 1 } } } },
      T,
      PROCESSORS,
    );
    const next = await store.leaseTasks({ queue, max: 10, visibilityTimeoutS: 3600, holder: "w" }, T + 302_000);
    expect(next.map((t) => t.flowKey)).toContain("starved");
    expect((await health(queue, T + 303_000)).figures).toMatchObject({ starved_key: null, starved_key_age_s: 0 });
  });

  it("finds a starved key past the first 200 keys: the tick's evaluations move the window on, and remember it", async () => {
    const store = d1TaskStore(db());
    const queue = uniqueQueue("starved");
    const t = T + 86_400_000;
    await store.putQueueConfig(queue, { flow: { fair: true } }, t, PROCESSORS);
    // 200 keys first in key order, each with a task not yet due (so none is starved), then "zz", due at t.
    await store.enqueueTasks(
      queue,
      [
        ...Array.from({ length: 200 }, (_, i) => ({ key: `a${String(i).padStart(3, "0")}`, runAt: t + 3_600_000 })),
        { key: "zz" },
      ],
      t,
    );
    const now = t + 301_000;
    const starvedOf = (all: Awaited<ReturnType<typeof evaluateHealth>>) =>
      all.find((h) => h.queue === queue)!.figures.starved_key;
    // One evaluation looks at a window of 200 keys: the first 200, where "zz" is not.
    expect((await health(queue, now)).figures.starved_key).toBeNull();
    // The tick's evaluation moves the window on: the first looks at the first 200, the next at the rest.
    expect(starvedOf(await evaluateHealth(db(), now, { advanceStarved: true }))).toBeNull();
    expect(starvedOf(await evaluateHealth(db(), now + 60_000, { advanceStarved: true }))).toBe("zz");
    // Remembered: every evaluation after it looks at "zz" again, whichever window it reads, until it runs.
    expect((await health(queue, now + 61_000)).figures).toMatchObject({ starved_key: "zz", starved_key_age_s: 362 });
    expect(starvedOf(await evaluateHealth(db(), now + 120_000, { advanceStarved: true }))).toBe("zz");
    // A lease looks at a window of keys too (200 for a lease of 100): the second goes on past the first 200.
    const lease = () => store.leaseTasks({ queue, max: 100, visibilityTimeoutS: 3600, holder: "w" }, now + 121_000);
    const leased = [...(await lease()), ...(await lease())];
    expect(leased.map((l) => l.flowKey)).toEqual(["zz"]);
    expect(starvedOf(await evaluateHealth(db(), now + 180_000, { advanceStarved: true }))).toBeNull();
  });
});
