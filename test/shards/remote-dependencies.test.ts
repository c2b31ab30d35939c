import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { openDb } from "../../src/db/client";
import { d1TaskStore } from "../../src/engine/d1-store";
import { startMove } from "../../src/shards/move";
import { enqueueToQueue } from "../../src/shards/queue-ops";
import { queueRoute } from "../../src/shards/queue-route";
import { deliverOwedSettlements, ORPHAN_SETTLEMENT_MS } from "../../src/shards/remote-settlements";
import { dependencyPageAnywhere } from "../../src/shards/dependency-pages";
import { runTask } from "../../src/dispatch/run-task";
import { Clock, runDeps, testProcessor } from "../dispatch/support";
import { atEveryD1Call } from "../support/failing-d1";
import { until } from "../support/until";
import { call, complete, enqueue, enqueueOne, expectError, getTask, lease, leaseOne, MISSING_ID } from "../http/api";
import { copyAll, finishMove, queueOn, shard } from "./support";

/** The task store of a shard by binding name. */
const storeOf = (name: "DB" | "DB_1") => d1TaskStore(openDb(name === "DB" ? env.DB : env.DB_1));

/** Leases the one task of `queue` (it must be `id`) and completes it over HTTP. */
async function completeOne(queue: string, id: string) {
  const leased = await leaseOne(queue);
  expect(leased.id).toBe(id);
  expect((await complete(id, leased.lease_token)).status).toBe(200);
}

/** Settlements owed (anywhere) for these dependencies. */
async function owed(...dependencies: string[]) {
  const all = [...(await storeOf("DB").owedSettlements(10_000)), ...(await storeOf("DB_1").owedSettlements(10_000))];
  return all.filter((o) => dependencies.includes(o.dependency));
}

describe("dependencies across shards", () => {
  it("a dependent waits for a task on another shard and becomes pending when it completes", async () => {
    const far = queueOn("DB_1", "xs-far");
    const near = queueOn("DB", "xs-near");
    const x = await enqueueOne(far);
    const local = await enqueueOne(near);
    const [join] = await enqueue(near, { type: "join", depends_on: [x, local] });
    expect(join!.state).toBe("waiting");
    expect((await getTask(join!.id)).queue).toBe(near);
    // Each end keeps its half: the edge on the dependency's shard, the wait on the dependent's.
    expect(await shard("DB_1").all(sql`SELECT dependent, outcome FROM remote_edges WHERE dependency = ${x}`)).toEqual([
      { dependent: join!.id, outcome: null },
    ]);
    expect(await storeOf("DB").listRemoteWaits(join!.id)).toEqual([{ id: x, outcome: null }]);

    await completeOne(far, x);
    // The effects owner delivers the settlement: the count goes down, the local dependency still holds it.
    await until(
      "the remote settlement to be counted",
      async () => (await storeOf("DB").getTask(join!.id)).waitingOn === 1,
    );
    expect(await owed(x)).toEqual([]);
    await completeOne(near, local);
    await until("the join to be released", async () => (await getTask(join!.id)).state === "pending");
    const deps = await call<{ dependencies: Array<{ id: string }> }>("GET", `/v1/tasks/${join!.id}/dependencies`);
    expect(deps.body.dependencies.map((d) => d.id).sort()).toEqual([x, local].sort());
  });

  it("a join's dependencies page reads a dependency on another shard where it lives, its result inline", async () => {
    const far = queueOn("DB_1", "xs-page-far");
    const near = queueOn("DB", "xs-page");
    const x = await enqueueOne(far, { type: "tts" });
    const [join] = await enqueue(near, { type: "join", depends_on: [x] });
    const leased = await leaseOne(far);
    expect((await complete(x, leased.lease_token, { url: "r2://a.mp3" })).status).toBe(200);
    const page = await call("GET", `/v1/tasks/${join!.id}/dependencies`);
    expect(page.status, page.text).toBe(200);
    expect(page.body).toEqual({
      dependencies: [
        { id: x, queue: far, type: "tts", state: "completed", result: { url: "r2://a.mp3" }, result_bytes: 20 },
      ],
      next_cursor: null,
    });
  });

  it("a task's dependents page lists its dependents on other shards, before and after they were told", async () => {
    const far = queueOn("DB_1", "xs-dependents-far");
    const near = queueOn("DB", "xs-dependents");
    const x = await enqueueOne(far, { type: "stt" });
    const [local] = await enqueue(far, { type: "join-here", depends_on: [x] });
    const [away] = await enqueue(near, { type: "join-away", depends_on: [x] });
    const page = async () =>
      (await call<{ dependents: unknown[]; next_cursor: string | null }>("GET", `/v1/tasks/${x}/dependents`)).body;
    const sorted = <T extends { id: string }>(list: T[]) => [...list].sort((a, b) => (a.id < b.id ? -1 : 1));
    expect(sorted((await page()).dependents as Array<{ id: string }>)).toEqual(
      sorted([
        { id: local!.id, queue: far, type: "join-here", state: "waiting", outcome: null },
        { id: away!.id, queue: near, type: "join-away", state: "waiting", outcome: null },
      ]),
    );
    await completeOne(far, x);
    await until("the remote settlement to be delivered", async () => (await owed(x)).length === 0);
    await until("the away join to be released", async () => (await getTask(away!.id)).state === "pending");
    // Delivered, and still listed: read where it lives, with what the finish counted as for it.
    expect(sorted((await page()).dependents as Array<{ id: string }>)).toEqual(
      sorted([
        { id: local!.id, queue: far, type: "join-here", state: "pending", outcome: "completed" },
        { id: away!.id, queue: near, type: "join-away", state: "pending", outcome: "completed" },
      ]),
    );
    // Pages in id order across both kinds: one entry a page.
    const first = await call<{ dependents: Array<{ id: string }>; next_cursor: string }>(
      "GET",
      `/v1/tasks/${x}/dependents?limit=1`,
    );
    const second = await call<{ dependents: Array<{ id: string }>; next_cursor: string | null }>(
      "GET",
      `/v1/tasks/${x}/dependents?limit=1&cursor=${first.body.next_cursor}`,
    );
    expect([...first.body.dependents, ...second.body.dependents].map((d) => d.id)).toEqual(
      [local!.id, away!.id].sort(),
    );
  });

  it("a push processor's ctx.dependencies() reads a dependency on another shard where it lives", async () => {
    const far = queueOn("DB_1", "xs-ctx-far");
    const near = queueOn("DB", "xs-ctx");
    const x = await enqueueOne(far, { type: "stt" });
    const [join] = await enqueue(near, { type: "probe", depends_on: [x] });
    const leased = await leaseOne(far);
    expect((await complete(x, leased.lease_token, { text: "hello" })).status).toBe(200);
    await until("the join to be released", async () => (await getTask(join!.id)).state === "pending");
    const task = (
      await storeOf("DB").leaseTasks({ queue: near, max: 1, visibilityTimeoutS: 30, holder: "push" }, Date.now())
    )[0]!;
    expect(task.id).toBe(join!.id);
    let seen: unknown;
    const probe = testProcessor("probe", async (_payload, ctx) => (seen = await ctx.dependencies()));
    // The reader the coordinator hands push dispatch (src/coordinator/coordinator.ts).
    const deps = {
      ...runDeps([probe], new Clock(Date.now())),
      dependencies: (id: string, page: { limit: number }) => dependencyPageAnywhere(env, id, page),
    };
    expect((await runTask(deps, task)).outcome).toBe("completed");
    expect(seen).toEqual({
      dependencies: [
        { id: x, queue: far, type: "stt", state: "completed", result: { text: "hello" }, result_bytes: 16 },
      ],
      next_cursor: null,
    });
  });

  it("a fan-out's join may wait on a task of another shard besides its children", async () => {
    const far = queueOn("DB_1", "xs-fan-far");
    const near = queueOn("DB", "xs-fan");
    const x = await enqueueOne(far);
    const res = await call<{ tasks: Array<{ id: string }>; join: { id: string; state: string } }>(
      "POST",
      `/v1/queues/${near}/tasks`,
      { body: { tasks: [{ type: "child" }], join: { type: "stitch", depends_on: [x] } } },
    );
    expect(res.status, res.text).toBe(201);
    expect(res.body.join.state).toBe("waiting");
    expect((await storeOf("DB").getTask(res.body.join.id)).waitingOn).toBe(2);
    await completeOne(near, res.body.tasks[0]!.id);
    await completeOne(far, x);
    await until("the join to be released", async () => (await getTask(res.body.join.id)).state === "pending");
    const bad = await call("POST", `/v1/queues/${near}/tasks`, {
      body: { tasks: [{ type: "child" }], join: { depends_on: [MISSING_ID] } },
    });
    expectError(bad, 400, "invalid_request", /join\.depends_on\[0\]: no task/);
  });

  it("refuses an unknown or pruned id on any shard with the 400 of one database, storing nothing", async () => {
    const near = queueOn("DB", "xs-unknown");
    const far = queueOn("DB_1", "xs-unknown-far");
    const x = await enqueueOne(far);
    const res = await call("POST", `/v1/queues/${near}/tasks`, { body: { tasks: [{ depends_on: [x, MISSING_ID] }] } });
    expectError(res, 400, "invalid_request", /tasks\[0\]\.depends_on\[1\]: no task/);
    expect((await call<{ tasks: unknown[] }>("GET", `/v1/queues/${near}/tasks`)).body.tasks).toEqual([]);
    expect(await shard("DB_1").all(sql`SELECT 1 FROM remote_edges WHERE dependency = ${x}`)).toEqual([]);
  });

  it("a failure on one shard ends dependents as their policies say, cascading across shards and back", async () => {
    const far = queueOn("DB_1", "xs-fail");
    const near = queueOn("DB", "xs-fail-near");
    const x = await enqueueOne(far, { max_attempts: 1 });
    const [failing] = await enqueue(near, { depends_on: [x], on_dependency_failure: "fail" });
    const [cancelling] = await enqueue(near, { depends_on: [x], on_dependency_failure: "cancel" });
    const [going] = await enqueue(near, { depends_on: [x], on_dependency_failure: "continue" });
    // A dependent of the failing one back on the first shard: the cascade crosses twice.
    const [downstream] = await enqueue(far, { depends_on: [failing!.id] });
    expect(downstream!.state).toBe("waiting");
    const leased = await leaseOne(far);
    expect(leased.id).toBe(x);
    await call("POST", `/v1/tasks/${x}/fail`, { body: { lease_token: leased.lease_token, error: "boom" } });
    await until("the cascade to reach back", async () => (await getTask(downstream!.id)).state === "dead");
    expect((await getTask(failing!.id)).state).toBe("dead");
    expect((await getTask(cancelling!.id)).state).toBe("cancelled");
    expect((await getTask(going!.id)).state).toBe("pending");
    expect(await owed(x, failing!.id)).toEqual([]);
  });

  it("a dependent whose queue moves while it waits is released where it went", async () => {
    const far = queueOn("DB_1", "xs-move-dep");
    const near = queueOn("DB", "xs-move");
    const x = await enqueueOne(far);
    const [join] = await enqueue(near, { depends_on: [x] });
    const now = Date.now();
    await startMove(env, near, 0, "DB_1", now);
    await finishMove(near, 0, now);
    // The wait travelled with it.
    expect(await storeOf("DB_1").listRemoteWaits(join!.id)).toEqual([{ id: x, outcome: null }]);
    expect(await storeOf("DB").listRemoteWaits(join!.id)).toEqual([]);
    await completeOne(far, x);
    await until("the moved join to be released", async () => (await getTask(join!.id)).state === "pending");
    expect((await lease(near, { max: 5 })).map((t) => t.id)).toEqual([join!.id]);
  });

  it("a dependency whose queue moves before it finishes still settles its dependent", async () => {
    const far = queueOn("DB_1", "xs-move-x");
    const near = queueOn("DB", "xs-move-x-near");
    const x = await enqueueOne(far);
    const [join] = await enqueue(near, { depends_on: [x] });
    const now = Date.now();
    await startMove(env, far, 0, "DB", now);
    await finishMove(far, 0, now);
    expect(await shard("DB").all(sql`SELECT dependent FROM remote_edges WHERE dependency = ${x}`)).toEqual([
      { dependent: join!.id },
    ]);
    await completeOne(far, x);
    await until("the join to be released", async () => (await getTask(join!.id)).state === "pending");
  });

  it("a settlement whose dependent is in transit waits for the next pass", async () => {
    const far = queueOn("DB_1", "xs-transit");
    const near = queueOn("DB", "xs-transit-near");
    const x = await enqueueOne(far);
    const [join] = await enqueue(near, { depends_on: [x] });
    const now = Date.now();
    await startMove(env, near, 0, "DB_1", now);
    // Taken out of DB, not delivered: in transit.
    await storeOf("DB").takeOutForTransit({ queue: near }, { shard: "DB_1", slot: 1 }, 100, now);
    const leased = (
      await storeOf("DB_1").leaseTasks({ queue: far, max: 1, visibilityTimeoutS: 30, holder: "w" }, now)
    )[0]!;
    await storeOf("DB_1").completeTasks([{ id: x, leaseToken: leased.leaseToken! }], now + 1);
    await deliverOwedSettlements(env, now + 2);
    expect(await owed(x)).toHaveLength(1);
    await copyAll(near, 0, now + 3);
    const { settled } = await deliverOwedSettlements(env, now + 4);
    expect(settled).toContainEqual(expect.objectContaining({ id: join!.id, state: "pending" }));
    expect(await storeOf("DB_1").getTask(join!.id)).toMatchObject({ state: "pending", waitingOn: 0 });
  });
});

describe("dependencies across shards: interrupted", () => {
  /** A join on DB waiting on x (DB_1) and on a local task that stays unfinished: counted twice, it would
   * be released; stranded, its count stays 2. The dependency completes without its delivery (a crash). */
  async function scenario(now: number) {
    const far = queueOn("DB_1", "xs-int");
    const near = queueOn("DB", "xs-int-near");
    const x = (await storeOf("DB_1").enqueueTasks(far, [{}], now)).tasks[0]!.id;
    const route = await queueRoute(env, near, now);
    const holder = (await enqueueToQueue(env, route, [{}], now)).tasks[0]!.id;
    const join = (await enqueueToQueue(env, route, [{ dependsOn: [x, holder] }], now)).tasks[0]!.id;
    const leased = (
      await storeOf("DB_1").leaseTasks({ queue: far, max: 1, visibilityTimeoutS: 30, holder: "w" }, now)
    )[0]!;
    await storeOf("DB_1").completeTasks([{ id: x, leaseToken: leased.leaseToken! }], now + 1);
    return { x, join };
  }

  it("a delivery stopped at any D1 call is made good by the next pass: counted once, none stranded", async () => {
    const points = await atEveryD1Call(env, 100, async (broken) => {
      const now = Date.now();
      const s = await scenario(now);
      const outcome = await deliverOwedSettlements(broken, now + 2).then(
        () => "finished",
        (error: unknown) => String(error),
      );
      // Then the next pass (the tick's reconcile), whole; and one more, which finds nothing to do.
      await deliverOwedSettlements(env, now + 3);
      await deliverOwedSettlements(env, now + 4);
      expect(await storeOf("DB").getTask(s.join)).toMatchObject({ state: "waiting", waitingOn: 1 });
      expect(await storeOf("DB").listRemoteWaits(s.join)).toEqual([{ id: s.x, outcome: "completed" }]);
      expect(await owed(s.x)).toEqual([]);
      return outcome;
    });
    expect(points).toBeGreaterThan(3);
  }, 120_000);

  it("an enqueue stopped at any D1 call leaves no dependent stranded and no settlement owed for ever", async () => {
    const points = await atEveryD1Call(env, 100, async (broken) => {
      const now = Date.now();
      const far = queueOn("DB_1", "xs-int-enq");
      const near = queueOn("DB", "xs-int-enq-near");
      const x = (await storeOf("DB_1").enqueueTasks(far, [{}], now)).tasks[0]!.id;
      const made = await queueRoute(broken, near, now)
        .then((route) => enqueueToQueue(broken, route, [{ dependsOn: [x] }], now))
        .then(
          (r) => r.tasks[0]!.id,
          () => null,
        );
      const leased = (
        await storeOf("DB_1").leaseTasks({ queue: far, max: 1, visibilityTimeoutS: 30, holder: "w" }, now)
      )[0]!;
      await storeOf("DB_1").completeTasks([{ id: x, leaseToken: leased.leaseToken! }], now + 1);
      await deliverOwedSettlements(env, now + 2);
      const waiting = await shard("DB").all<{ id: string; state: string }>(
        sql`SELECT id, state FROM tasks WHERE queue = ${near}`,
      );
      // Whatever was inserted is released; nothing is left waiting on x.
      expect(waiting.filter((t) => t.state !== "pending")).toEqual([]);
      if (made) expect(waiting.map((t) => t.id)).toEqual([made]);
      // A settlement whose dependent was never inserted is dropped once no enqueue can still insert it.
      await deliverOwedSettlements(env, now + ORPHAN_SETTLEMENT_MS + 1);
      expect(await owed(x)).toEqual([]);
      return made === null ? "refused" : "finished";
    });
    expect(points).toBeGreaterThan(2);
  }, 120_000);
});
