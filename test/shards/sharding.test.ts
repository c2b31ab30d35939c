import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { coordinatorOf } from "../../src/effects/wake";
import { fnv1a, forgetPlacements, readPlacements } from "../../src/shards/directory";
import { startMove } from "../../src/shards/move";
import { pruneAddresses } from "../../src/shards/prune-addresses";
import { advanceMove, relayAll } from "../../src/shards/relay";
import { enqueueTasks } from "../../src/engine/enqueue";
import { readShard, shardNames } from "../../src/shards/shard-set";
import { decodeSlot } from "../../src/shards/task-slot";
import { uniqueQueue } from "../helpers";
import { idsOn, queueOn, shard } from "./support";
import { until } from "../support/until";
import { call, complete, enqueue, enqueueOne, expectError, getTask, lease, leaseOne } from "../http/api";

const sum = (counts: number[]) => counts.reduce((a, b) => a + b, 0);

describe("placement", () => {
  it("places a queue on first use by the stable rule, records it, and keeps it", async () => {
    expect(shardNames(env)).toEqual(["DB", "DB_1"]);
    const queue = queueOn("DB_1", "placed");
    const id = await enqueueOne(queue, { payload: { n: 1 } });
    expect(await idsOn("DB_1", queue)).toEqual([id]);
    expect(await idsOn("DB", queue)).toEqual([]);
    const [row] = await readPlacements(shard("DB"), queue);
    expect(row).toMatchObject({ queue, part: 0, shard: "DB_1", movingFrom: null });
    // The id carries the partition's slot: a single-task call finds its database from the id alone.
    expect(decodeSlot(id)).toBe(row!.slot);
    forgetPlacements();
    await enqueueOne(queue);
    expect(await idsOn("DB_1", queue)).toHaveLength(2);
  });

  it("keeps a queue whose data is already on the home database there (data from before sharding)", async () => {
    const queue = queueOn("DB_1", "legacy");
    await shard("DB").run(sql`INSERT INTO queues (name, max_attempts, updated_at) VALUES (${queue}, 7, 0)`);
    await enqueueOne(queue);
    expect(await idsOn("DB", queue)).toHaveLength(1);
    expect((await call<{ max_attempts: number }>("GET", `/v1/queues/${queue}/config`)).body.max_attempts).toBe(7);
  });
});

describe("routing", () => {
  it("sends every single-task call to the shard that holds the task", async () => {
    const queue = queueOn("DB_1", "route");
    const [a, b, c] = (await enqueue(queue, { tasks: [{ payload: 1 }, { payload: 2 }, { payload: 3 }] })).map(
      (t) => t.id,
    );
    expect(await idsOn("DB_1", queue)).toEqual([a, b, c].sort());
    expect((await getTask(a!)).queue).toBe(queue);
    const leased = await lease(queue, { max: 3 });
    const byId = new Map(leased.map((t) => [t.id, t]));
    const hb = await call("POST", `/v1/tasks/${a}/heartbeat`, {
      body: { lease_token: byId.get(a!)!.lease_token, progress: 40 },
    });
    expect(hb.status).toBe(200);
    expect((await complete(a!, byId.get(a!)!.lease_token, { ok: true })).body).toMatchObject({ state: "completed" });
    const failed = await call("POST", `/v1/tasks/${b}/fail`, {
      body: { lease_token: byId.get(b!)!.lease_token, error: "no", retryable: false },
    });
    expect(failed.body).toMatchObject({ state: "dead" });
    expect((await call("POST", `/v1/tasks/${c}/cancel`)).body).toMatchObject({ id: c });
    const retried = await call("POST", `/v1/tasks/${b}/retry`);
    expect(retried.body).toMatchObject({ state: "pending" });
    const again = await leaseOne(queue);
    expect(again.id).toBe(b);
    expect((await call("GET", `/v1/tasks/${b}/artifacts`)).body).toEqual({ artifacts: [] });
    const released = await call("POST", `/v1/tasks/${b}/release`, { body: { lease_token: again.lease_token } });
    expect(released.body).toMatchObject({ id: b, state: "pending" });
    // A stale token is still refused on the right shard, not "not found".
    expectError(await complete(a!, "0".repeat(32)), 409, "lease_lost");
  });

  it("finds a task whose id is the client's own through its recorded address", async () => {
    const queue = queueOn("DB_1", "client-id");
    const id = "01JAAAAAAAAAAAAAAAAAAAAAAA";
    const [created] = await enqueue(queue, { id, payload: "mine" });
    expect(created).toMatchObject({ id, deduplicated: false });
    expect(await idsOn("DB_1", queue)).toEqual([id]);
    expect((await getTask(id)).payload).toBe("mine");
    // Enqueued again with the same id: found through the address, deduplicated as on one database.
    expect((await enqueue(queue, { id, payload: "again" }))[0]).toMatchObject({ id, deduplicated: true });
  });

  it("reads views through D1's Sessions API (a replica may answer), writes through the primary", async () => {
    expect(typeof env.DB.withSession).toBe("function");
    const view = readShard(env, "DB_1");
    expect(view.db.$client).not.toBe(env.DB_1);
    const queue = queueOn("DB_1", "session");
    const id = await enqueueOne(queue);
    const seen = await view.db.all<{ id: string }>(sql`SELECT id FROM tasks WHERE queue = ${queue}`);
    expect(seen.map((r) => r.id)).toEqual([id]);
  });

  it("lists and counts queues over every shard", async () => {
    const onHome = queueOn("DB", "list");
    const onOther = queueOn("DB_1", "list");
    await enqueueOne(onHome);
    await enqueue(onOther, { tasks: [{}, {}] });
    const all = await call<{ queues: Array<{ queue: string; counts: Record<string, number> }> }>("GET", "/v1/queues");
    const byName = new Map(all.body.queues.map((q) => [q.queue, q.counts.pending]));
    expect([byName.get(onHome), byName.get(onOther)]).toEqual([1, 2]);
    const stats = await call<{ counts: Record<string, number>; due: number }>("GET", `/v1/queues/${onOther}/stats`);
    expect(stats.body).toMatchObject({ counts: { pending: 2 }, due: 2 });
  });
});

describe("partitioned queues", () => {
  it("spreads tasks over K partitions and never leases a task twice under concurrent leases", async () => {
    const queue = uniqueQueue("parts");
    const put = await call<{ partitions: number }>("PUT", `/v1/queues/${queue}/config`, { body: { partitions: 2 } });
    expect(put.body.partitions).toBe(2);
    const placements = await readPlacements(shard("DB"), queue);
    expect(placements.map((p) => p.shard).sort()).toEqual(["DB", "DB_1"]);
    const ids = (await enqueue(queue, { tasks: Array.from({ length: 60 }, (_, i) => ({ payload: i })) })).map(
      (t) => t.id,
    );
    const [onHome, onOther] = [await idsOn("DB", queue), await idsOn("DB_1", queue)];
    expect(onHome.length + onOther.length).toBe(60);
    expect(onHome.length).toBeGreaterThan(0);
    expect(onOther.length).toBeGreaterThan(0);
    // Eight leasers at once, 10 each: every task exactly once.
    const batches = await Promise.all(Array.from({ length: 8 }, () => lease(queue, { max: 10 })));
    const leased = batches.flat().map((t) => t.id);
    expect(new Set(leased).size).toBe(leased.length);
    const rest = await lease(queue, { max: 100 });
    expect([...leased, ...rest.map((t) => t.id)].sort()).toEqual([...ids].sort());
    // Shrinking is refused and stores nothing.
    expectError(await call("PUT", `/v1/queues/${queue}/config`, { body: { partitions: 1 } }), 400, "invalid_request");
    expect((await call<{ partitions: number }>("GET", `/v1/queues/${queue}/config`)).body.partitions).toBe(2);
  });

  it("keeps a dedupe key unique queue-wide: the key picks the partition", async () => {
    const queue = uniqueQueue("parts-dedupe");
    await call("PUT", `/v1/queues/${queue}/config`, { body: { partitions: 2 } });
    const first = await enqueue(queue, { tasks: Array.from({ length: 6 }, (_, i) => ({ dedupe_key: `k${i}` })) });
    const again = await enqueue(queue, { tasks: Array.from({ length: 6 }, (_, i) => ({ dedupe_key: `k${i}` })) });
    expect(again.map((t) => t.deduplicated)).toEqual(Array(6).fill(true));
    expect(again.map((t) => t.id)).toEqual(first.map((t) => t.id));
  });
});

describe("a coordinator per partition", () => {
  it("arms the alarm of the partition that holds a delayed task, and only that one", async () => {
    const queue = uniqueQueue("parts-alarm");
    await call("PUT", `/v1/queues/${queue}/config`, { body: { partitions: 2 } });
    const placements = await readPlacements(shard("DB"), queue);
    // A dedupe key picks the partition: find one that lands on partition 1.
    let key = 0;
    while (fnv1a(`k${key}`) % 2 !== 1) key++;
    const runAt = Date.now() + 3_600_000;
    const [task] = await enqueue(queue, { dedupe_key: `k${key}`, run_at: new Date(runAt).toISOString() });
    expect(decodeSlot(task!.id)).toBe(placements[1]!.slot);
    // The wake-up goes out after the response (waitUntil): wait for its alarm.
    const armed = await until("partition 1's coordinator to arm its alarm", () =>
      runInDurableObject(coordinatorOf(env, queue, 1), (_o, state) => state.storage.getAlarm()),
    );
    expect(armed).toBe(runAt);
    expect(await runInDurableObject(coordinatorOf(env, queue, 0), (_o, state) => state.storage.getAlarm())).toBeNull();
  });

  it("a long poll on a partitioned queue is answered by tasks enqueued while it waits", async () => {
    const queue = uniqueQueue("parts-poll");
    await call("PUT", `/v1/queues/${queue}/config`, { body: { partitions: 2 } });
    // Two polls wait (each at one partition's coordinator, in turn); eight tasks land on both partitions,
    // four on each (spread in turn). Each poll takes at most four, so both are answered as the tasks
    // arrive: none waits out its wait_s, which only bounds a failure.
    const polls = [lease(queue, { max: 4, wait_s: 3 }), lease(queue, { max: 4, wait_s: 3 })];
    const waiting = () => Promise.all([0, 1].map((part) => coordinatorOf(env, queue, part).waiting()));
    await until("both polls to wait in the partitions' coordinators", async () => sum(await waiting()) === 2);
    const ids = (await enqueue(queue, { tasks: Array.from({ length: 8 }, () => ({})) })).map((t) => t.id);
    const got = (await Promise.all(polls)).map((answer) => answer.map((t) => t.id));
    // Every task handed out once, four to each poll.
    expect(got.map((answer) => answer.length)).toEqual([4, 4]);
    expect(got.flat().sort()).toEqual([...ids].sort());
  }, 15_000);
});

describe("a long poll on a partitioned queue", () => {
  it("waiting at one partition's coordinator, is woken by an arrival on another partition", async () => {
    const queue = uniqueQueue("parts-wake");
    await call("PUT", `/v1/queues/${queue}/config`, { body: { partitions: 2 } });
    const placements = await readPlacements(shard("DB"), queue);
    // The poll waits at partition 1's coordinator (it leases from both partitions) ...
    const started = Date.now();
    const poll = coordinatorOf(env, queue, 1).lease({
      queue,
      part: 1,
      max: 1,
      visibilityTimeoutS: 60,
      holder: "at-1",
      waitMs: 15_000,
    });
    await until("the poll to wait at partition 1", async () => (await coordinatorOf(env, queue, 1).waiting()) === 1);
    // ... and the task lands on partition 0 (a dedupe key picks the partition), whose coordinator holds no poll.
    let key = 0;
    while (fnv1a(`k${key}`) % 2 !== 0) key++;
    const [task] = await enqueue(queue, { dedupe_key: `k${key}` });
    expect(decodeSlot(task!.id)).toBe(placements[0]!.slot);
    expect((await poll).map((t) => [t.id, t.leaseHolder])).toEqual([[task!.id, "at-1"]]);
    // Woken by the arrival: the end of its wait would have answered it with nothing.
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(await coordinatorOf(env, queue, 0).waiting()).toBe(0);
  }, 20_000);
});

describe("moving a queue between shards", () => {
  it("moves every task once, keeps held leases valid, and resumes after a crash half way", async () => {
    const queue = queueOn("DB", "move");
    const ids = (await enqueue(queue, { tasks: Array.from({ length: 450 }, (_, i) => ({ payload: i })) })).map(
      (t) => t.id,
    );
    const held = await leaseOne(queue);
    const now = Date.now();
    await startMove(env, queue, 0, "DB_1", now);
    expectError(await call("POST", `/v1/queues/${queue}/move`, { body: { shard: "DB_1" } }), 409, "move_conflict");
    const [moving] = await readPlacements(shard("DB"), queue);
    expect(moving).toMatchObject({ shard: "DB_1", movingFrom: "DB", moveState: "copying" });
    // The relay crashes after taking a chunk out of the old shard, before delivering it.
    await expect(advanceMove(env, moving!, now, { maxSteps: 1, faults: { crashAfterTakeOut: true } })).rejects.toThrow(
      /injected crash/,
    );
    const inTransit = await shard("DB").all<{ id: string }>(sql`SELECT id FROM task_transit WHERE queue = ${queue}`);
    expect(inTransit.length).toBeGreaterThan(0);
    // A task in transit is neither here nor there for a moment: 503 task_moving, retry.
    const res = await call("GET", `/v1/tasks/${inTransit[0]!.id}`);
    expectError(res, 503, "task_moving");
    // Tasks still on the old shard are leased and acked there during the move.
    const during = await leaseOne(queue);
    expect((await complete(during.id, during.lease_token, "during")).status).toBe(200);
    // Resume: the move finishes; each task exists once, on the new shard only.
    let state = "copying";
    for (let i = 0; i < 10 && state === "copying"; i++) {
      const [p] = await readPlacements(shard("DB"), queue);
      state = (await advanceMove(env, p!, now)).state;
    }
    expect(state).toBe("settling");
    expect(await idsOn("DB", queue)).toEqual([]);
    expect(await idsOn("DB_1", queue)).toEqual([...ids].sort());
    expect(await shard("DB").all(sql`SELECT id FROM task_transit WHERE queue = ${queue}`)).toEqual([]);
    // The lease held across the move is still valid on the new shard, with its token.
    expect((await complete(held.id, held.lease_token, "held")).body).toMatchObject({ state: "completed" });
    const stats = await call<{ counts: Record<string, number> }>("GET", `/v1/queues/${queue}/stats`);
    expect(stats.body.counts).toMatchObject({ pending: 448, completed: 2 });
    // After the settle period the old shard is let go.
    const [settling] = await readPlacements(shard("DB"), queue);
    expect((await advanceMove(env, settling!, now + 61_000)).state).toBe("done");
    const placement = await call<{ partitions: Array<{ shard: string; move: unknown }> }>(
      "GET",
      `/v1/queues/${queue}/placement`,
    );
    expect(placement.body.partitions).toEqual([{ part: 0, shard: "DB_1", move: null }]);
  });

  it("refuses a move to an unknown shard with 400, changing nothing", async () => {
    const queue = queueOn("DB", "move-bad");
    await enqueueOne(queue);
    expectError(await call("POST", `/v1/queues/${queue}/move`, { body: { shard: "DB_9" } }), 400, "invalid_request");
    expect((await readPlacements(shard("DB"), queue))[0]).toMatchObject({ shard: "DB", movingFrom: null });
  });
});

describe("the cron's relay sweep", () => {
  it("sends home a live task found on a shard its queue is not placed on, and leaves finished ones", async () => {
    const queue = queueOn("DB_1", "stray");
    await enqueueOne(queue); // placed on DB_1
    const now = Date.now();
    const { tasks } = await enqueueTasks(shard("DB"), queue, [{ payload: "stray" }, { payload: "done" }], now);
    const [stray, done] = tasks.map((t) => t.id);
    await shard("DB").run(sql`UPDATE tasks SET state = 'completed', finished_at = ${now} WHERE id = ${done!}`);
    const { queues } = await relayAll(env, now);
    expect(queues).toContain(queue);
    expect(await idsOn("DB", queue)).toEqual([done]);
    expect(await idsOn("DB_1", queue)).toContain(stray);
    expect((await getTask(stray!)).payload).toBe("stray");
  });
});

describe("addresses of client-supplied ids", () => {
  it("are forgotten once their task is gone, and kept while it exists", async () => {
    const queue = queueOn("DB_1", "addr-prune");
    const kept = "01JBBBBBBBBBBBBBBBBBBBBBBB";
    const gone = "01JBBBBBBBBBBBBBBBBBBBBBBC";
    await enqueue(queue, { tasks: [{ id: kept }, { id: gone }] });
    await shard("DB_1").run(sql`DELETE FROM tasks WHERE id = ${gone}`);
    const addresses = () =>
      shard("DB").all<{ id: string }>(sql`SELECT id FROM task_addresses WHERE id IN (${kept}, ${gone})`);
    expect((await addresses()).map((r) => r.id).sort()).toEqual([kept, gone]);
    // Checked once they have gone unchecked an hour (the clock moved for the pruner only); other tests'
    // addresses may be checked in the same pass, so the pass repeats until these two were.
    const later = Date.now() + 2 * 3_600_000;
    for (let i = 0; i < 20 && (await addresses()).length > 1; i++) await pruneAddresses(env, later);
    expect((await addresses()).map((r) => r.id)).toEqual([kept]);
    const checked = await shard("DB").get<{ at: number }>(
      sql`SELECT created_at AS at FROM task_addresses WHERE id = ${kept}`,
    );
    expect(checked!.at).toBe(later);
    expect((await getTask(kept)).id).toBe(kept);
  });
});
