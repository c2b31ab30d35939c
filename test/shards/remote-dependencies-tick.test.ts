import { beforeAll, describe, expect, it } from "vitest";
import { runTick } from "../../src/cron/tick";
import { openDb } from "../../src/db/client";
import { d1TaskStore } from "../../src/engine/d1-store";
import { enqueueToQueue } from "../../src/shards/queue-ops";
import { queueRoute } from "../../src/shards/queue-route";
import { clockRange } from "../support/clock-range";
import { clearQueue } from "../support/clear-queue";
import { atEveryD1Call } from "../support/failing-d1";
import { ownShards } from "../support/own-shards";
import { queueOn } from "./support";

const HOUR = 3_600_000;
// Two databases of this file's own stand in for the shards (test/support/own-shards.ts): every tick here reads
// only what this file wrote, so each point's D1 calls are the same whatever ran before it in this workerd.
let env: Awaited<ReturnType<typeof ownShards>>;
beforeAll(async () => {
  env = await ownShards("SETTLE");
});
const storeOf = (name: "DB" | "DB_1") => d1TaskStore(openDb(name === "DB" ? env.DB : env.DB_1));

/**
 * A join on DB waiting on x (DB_1) and on a local task that stays unfinished, with x completed and its
 * settlement never delivered (the Worker stopped after the completion's commit). Counted twice, the join
 * would be released; stranded, its count would stay 2.
 */
async function scenario(t: number) {
  const far = queueOn("DB_1", "xs-tick");
  const near = queueOn("DB", "xs-tick-near");
  const x = (await storeOf("DB_1").enqueueTasks(far, [{}], t)).tasks[0]!.id;
  const route = await queueRoute(env, near, t);
  const holder = (await enqueueToQueue(env, route, [{}], t)).tasks[0]!.id;
  const join = (await enqueueToQueue(env, route, [{ dependsOn: [x, holder] }], t)).tasks[0]!.id;
  const [leased] = await storeOf("DB_1").leaseTasks({ queue: far, max: 1, visibilityTimeoutS: 30, holder: "w" }, t);
  await storeOf("DB_1").completeTasks([{ id: x, leaseToken: leased!.leaseToken! }], t + 1);
  return { x, join, far, near, now: t + HOUR };
}

/** Ends and deletes what a scenario left on both shards, so a later point's ticks sweep only their own. */
async function clearScenario(s: Awaited<ReturnType<typeof scenario>>) {
  await clearQueue(storeOf("DB"), s.near, s.now);
  await clearQueue(storeOf("DB_1"), s.far, s.now);
}

async function expectSettledOnce(s: Awaited<ReturnType<typeof scenario>>) {
  expect(await storeOf("DB").getTask(s.join)).toMatchObject({ state: "waiting", waitingOn: 1 });
  expect(await storeOf("DB").listRemoteWaits(s.join)).toEqual([{ id: s.x, outcome: "completed" }]);
  const owed = [...(await storeOf("DB").owedSettlements(10_000)), ...(await storeOf("DB_1").owedSettlements(10_000))];
  expect(owed.filter((o) => o.dependency === s.x)).toEqual([]);
}

describe("cron tick: settlements owed across shards", () => {
  it("delivers what a crash after a completion left owed", async () => {
    const clock = clockRange("shards/remote-dependencies-tick");
    const s = await scenario(clock.day(0));
    expect(await storeOf("DB").getTask(s.join)).toMatchObject({ waitingOn: 2 });
    // Delivered by this tick (or by a delivery still running in the background of another file's request,
    // on this shared database: either way, once).
    await runTick(env, s.now);
    await expectSettledOnce(s);
    await clearScenario(s);
  });

  it("stopped at any D1 call, the next tick makes it good: counted once, none stranded", async () => {
    const clock = clockRange("shards/remote-dependencies-tick");
    const points = await atEveryD1Call(env, 300, async (broken, failAt) => {
      const s = await scenario(clock.day(failAt));
      const outcome = await runTick(broken, s.now).then(
        () => "finished",
        (error: unknown) => String(error),
      );
      await runTick(env, s.now);
      await expectSettledOnce(s);
      await clearScenario(s);
      return outcome;
    });
    expect(points).toBeGreaterThan(10);
  }, 300_000);
});
