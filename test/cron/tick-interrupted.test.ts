import { sql } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { runTick } from "../../src/cron/tick";
import { openDb } from "../../src/db/client";
import { completeTasks } from "../../src/engine/complete";
import { minuteOf } from "../../src/engine/counters";
import { d1TaskStore } from "../../src/engine/d1-store";
import { enqueueTasks } from "../../src/engine/enqueue";
import { leaseTasks } from "../../src/engine/lease";
import { putQueueConfig } from "../../src/engine/queue-config";
import { getTask } from "../../src/engine/read";
import { PROCESSORS, uniqueQueue } from "../helpers";
import { clearQueue } from "../support/clear-queue";
import { clockRange } from "../support/clock-range";
import { atEveryD1Call } from "../support/failing-d1";
import { ownShards } from "../support/own-shards";

const DAY = 86_400_000;
const HOUR = 3_600_000;

// Two databases of this file's own stand in for the shards (test/support/own-shards.ts): every tick here reads
// only what this file wrote, so each point's D1 calls are the same whatever ran before it in this workerd.
let env: Awaited<ReturnType<typeof ownShards>>;
beforeAll(async () => {
  env = await ownShards("TICK");
});
const db = () => openDb(env.DB);
const row = (id: string) => getTask(db(), id);

/** One of each thing a tick changes, in a queue of its own, set up at `t` for a tick two hours later. */
async function scenario(t: number) {
  const queue = uniqueQueue("interrupted");
  await putQueueConfig(db(), queue, { retention_s: 3600 }, t, PROCESSORS);
  const leaseOne = async (opts: { maxAttempts?: number; vt: number; provisional?: boolean }) => {
    const [task] = (await enqueueTasks(db(), queue, [{ maxAttempts: opts.maxAttempts }], t)).tasks;
    const [leased] = await leaseTasks(
      db(),
      { queue, max: 1, visibilityTimeoutS: opts.vt, holder: "w", provisional: opts.provisional },
      t,
    );
    expect(leased!.id).toBe(task!.id);
    return leased!;
  };
  const expired = await leaseOne({ vt: 30 }); // lapses: back to pending after backoff, "lease expired" once
  const exhausted = await leaseOne({ vt: 30, maxAttempts: 1 }); // lapses on its last attempt: dead
  const unclaimed = await leaseOne({ vt: 600, provisional: true }); // never claimed: handed back, attempt refunded
  const live = await leaseOne({ vt: 12 * 3600 }); // still held at the tick
  const finished = await leaseOne({ vt: 30 });
  await completeTasks(db(), [{ id: finished.id, leaseToken: finished.leaseToken! }], t + 1000);
  // A minute of counters old enough to be folded into the queue's totals.
  await db().run(sql`INSERT INTO task_counters (queue, type, minute, enqueued) VALUES
    (${queue}, 'default', ${minuteOf(t - 2 * DAY)}, 7)`);
  return { queue, expired, exhausted, unclaimed, live, finished, now: t + 2 * HOUR };
}

type Scenario = Awaited<ReturnType<typeof scenario>>;

/** Ends and deletes what a scenario left (the live lease too), so a later point's ticks sweep only their own. */
const clearScenario = (s: Scenario) =>
  clearQueue(d1TaskStore(db()), s.queue, s.now, [{ id: s.live.id, leaseToken: s.live.leaseToken! }]);

/** What every tick — whole, or interrupted and then run again — must leave. */
async function expectTicked(s: Scenario) {
  const errors = async (id: string) => JSON.parse((await row(id)).errors) as Array<{ kind: string }>;
  // Each lapse handled once: one "lease expired" entry, one attempt counted, one refund.
  expect(await row(s.expired.id)).toMatchObject({ state: "pending", attempts: 1, leaseToken: null });
  expect((await errors(s.expired.id)).map((e) => e.kind)).toEqual(["lease_expired"]);
  expect(await row(s.exhausted.id)).toMatchObject({ state: "dead", attempts: 1 });
  expect((await errors(s.exhausted.id)).map((e) => e.kind)).toEqual(["lease_expired"]);
  expect(await row(s.unclaimed.id)).toMatchObject({ state: "pending", attempts: 0, leaseToken: null });
  expect(await errors(s.unclaimed.id)).toEqual([]);
  expect(await row(s.live.id)).toMatchObject({ state: "processing", leaseToken: s.live.leaseToken });
  // Nothing of the queue pruned but the finished task (which the prune's walk deletes when it passes it, at
  // this tick or a later one: src/engine/purge.ts; test/cron/tick.test.ts waits for it).
  const left = await db().all<{ id: string }>(
    sql`SELECT id FROM tasks WHERE queue = ${s.queue} AND id != ${s.finished.id}`,
  );
  expect(left.map((r) => r.id).sort()).toEqual([s.expired.id, s.exhausted.id, s.unclaimed.id, s.live.id].sort());
  const finished = await db().get<{ state: string }>(sql`SELECT state FROM tasks WHERE id = ${s.finished.id}`);
  expect(finished?.state ?? "pruned").toMatch(/^(completed|pruned)$/);
  // A fold (of the oldest hour of counters in the database, wherever it is) moves minutes into the totals
  // in one batch: whether it reached this queue's old minute or not, nothing is lost or counted twice.
  const counters = await db().get<{ enqueued: number; failed: number }>(sql`SELECT
      sum(enqueued) AS enqueued, sum(failed) AS failed FROM task_counters WHERE queue = ${s.queue}`);
  expect(counters!.enqueued).toBe(5 + 7);
  // Counts of a reap are written just after it: an interruption in between may lose them, never double them.
  expect(counters!.failed).toBeLessThanOrEqual(2);
}

describe("cron tick: interrupted half way", () => {
  it("is safe to run again after stopping at any D1 call: nothing reaped twice, nothing lost", async () => {
    // A day of this file's clock range per interruption point: another file's tasks in one would be swept
    // here, or ours in its walk.
    const clock = clockRange("cron/tick-interrupted");
    const reference = await scenario(clock.day(0));
    await runTick(env, reference.now);
    await expectTicked(reference);
    await clearScenario(reference);

    // A tick makes a few dozen D1 calls.
    const points = await atEveryD1Call(env, 200, async (broken, failAt) => {
      const s = await scenario(clock.day(failAt));
      const outcome = await runTick(broken, s.now).then(
        () => "finished",
        (error: unknown) => String(error),
      );
      // Then the next tick, whole.
      await runTick(env, s.now);
      await expectTicked(s);
      await clearScenario(s);
      // Stopped at call failAt: the injected error ended the tick (wrapped by Drizzle, which names the query),
      // or a step that tolerates a failure (a coordinator's wake-up) logged it and the tick went on.
      expect(outcome === "finished" || /injected D1 failure|Failed query/.test(outcome)).toBe(true);
      return outcome;
    });
    expect(points).toBeGreaterThan(10);
    // Its ~57 points took 74 s alone at load 11 and 181 s in a whole `npm test` at load 15 beside three other
    // files of the project: 300 s, as shards/remote-dependencies-tick's, says a hang, not a busy machine.
  }, 300_000);
});
