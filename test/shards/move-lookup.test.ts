import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { monotonicFactory } from "ulid";
import { describe, expect, it } from "vitest";
import { getTask } from "../../src/engine/read";
import { clearTransit, listTransit, putInFromTransit, takeOutForTransit } from "../../src/engine/transit";
import { ackOnRoute } from "../../src/shards/ack-routing";
import { readPlacements, type Placement } from "../../src/shards/directory";
import { placementView, startMove } from "../../src/shards/move";
import { queueRoute } from "../../src/shards/queue-route";
import { onTaskShard } from "../../src/shards/task-locator";
import { decodeSlot } from "../../src/shards/task-slot";
import { call, complete, enqueue, enqueueOne, getTask as getOverHttp, lease } from "../http/api";
import { copyAll, finishMove, queueOn, shard } from "./support";

const clientId = monotonicFactory();

/** Where each of the queue's tasks is: its shard and the partition it belongs to (slot column, else its id). */
async function whereabouts(
  queue: string,
  placements: Placement[],
): Promise<Map<string, { shard: string; part: number }>> {
  const found = new Map<string, { shard: string; part: number }>();
  for (const name of ["DB", "DB_1"]) {
    const rows = await shard(name).all<{ id: string; slot: number | null }>(
      sql`SELECT id, slot FROM tasks WHERE queue = ${queue}`,
    );
    for (const r of rows) {
      const slot = r.slot ?? decodeSlot(r.id);
      found.set(r.id, { shard: name, part: placements.find((p) => p.slot === slot)?.part ?? -1 });
    }
  }
  return found;
}

/** A queue of three partitions, 0 and 2 on DB_1 and 1 on DB. */
async function sharedQueue(prefix: string): Promise<{ queue: string; placements: Placement[] }> {
  const queue = queueOn("DB_1", prefix);
  expect((await call("PUT", `/v1/queues/${queue}/config`, { body: { partitions: 3 } })).status).toBe(200);
  await enqueueOne(queue); // places the partitions
  const placements = await readPlacements(shard("DB"), queue);
  expect(placements.map((p) => p.shard)).toEqual(["DB_1", "DB", "DB_1"]);
  return { queue, placements };
}

describe("a partition's move with tasks whose ids are the client's own", () => {
  it("takes them with the partition: each answers by id afterwards and completes through the single-task route", async () => {
    const { queue, placements } = await sharedQueue("move-client-ids");
    const now = Date.now();
    await enqueue(queue, {
      tasks: Array.from({ length: 30 }, (_, i) => (i % 2 === 0 ? { id: clientId(now), payload: i } : { payload: i })),
    });
    const before = await whereabouts(queue, placements);
    const clientIds = [...before.keys()].filter(
      (id) => decodeSlot(id) === null || !placements.some((p) => p.slot === decodeSlot(id)),
    );
    const ofPart0 = [...before].filter(([, w]) => w.part === 0).map(([id]) => id);
    expect(clientIds.filter((id) => before.get(id)!.part === 0).length).toBeGreaterThan(0);
    expect([...before.values()].every((w) => w.part >= 0)).toBe(true);

    await startMove(env, queue, 0, "DB", now);
    const moving = await placementView(env, queue);
    expect(moving[0]!.move?.left_on_source).toBe(ofPart0.length);
    await finishMove(queue, 0, now);
    expect((await placementView(env, queue))[0]).toMatchObject({ shard: "DB", move: null });

    const after = await whereabouts(queue, await readPlacements(shard("DB"), queue));
    for (const [id, w] of before) {
      const expected = w.part === 0 ? "DB" : w.part === 1 ? "DB" : "DB_1";
      expect(after.get(id), id).toEqual({ shard: expected, part: w.part });
    }
    for (const id of before.keys()) expect((await getOverHttp(id)).id).toBe(id);
    const leased = await lease(queue, { max: 100 });
    expect(leased).toHaveLength(31);
    for (const task of leased) {
      expect((await complete(task.id, task.lease_token, null)).body).toMatchObject({ id: task.id, state: "completed" });
    }
    // Many single-task calls, each a few D1 statements: seconds on 2 busy cores.
  }, 30_000);

  it("moves a chained child of such a task with its parent's partition, and finds it by id before and after", async () => {
    const { queue, placements } = await sharedQueue("move-client-child");
    const now = Date.now();
    await enqueue(queue, {
      tasks: Array.from({ length: 6 }, (_, i) => ({
        id: clientId(now),
        payload: i,
        then: [{ type: "child", payload: { n: i } }],
      })),
    });
    for (const task of await lease(queue, { max: 10 })) await complete(task.id, task.lease_token, task.id);
    const children = (
      await Promise.all(
        ["DB", "DB_1"].map((name) =>
          shard(name).all<{ id: string; slot: number | null; parent: string }>(
            sql`SELECT id, slot, payload->>'$.parent.id' AS parent FROM tasks WHERE queue = ${queue} AND state = 'pending'`,
          ),
        ),
      )
    ).flat();
    expect(children).toHaveLength(6);
    const parents = await whereabouts(queue, placements);
    const ofPart0 = children.filter((c) => parents.get(c.parent)?.part === 0);
    expect(ofPart0.length).toBeGreaterThan(0);
    for (const child of children) {
      // The parent's id carries no slot, so its child's carries none either: the row names the partition.
      expect(child.slot).toBe(placements[parents.get(child.parent)!.part]!.slot);
      expect(decodeSlot(child.id) === child.slot).toBe(false);
      expect((await getOverHttp(child.id)).state).toBe("pending");
    }

    await startMove(env, queue, 0, "DB", now);
    await finishMove(queue, 0, now);
    const moved = await shard("DB").all<{ id: string }>(
      sql`SELECT id FROM tasks WHERE queue = ${queue} AND state = 'pending'`,
    );
    // Partition 1's children were on DB all along; partition 0's joined them, partition 2's stayed on DB_1.
    const onDb = children.filter((c) => parents.get(c.parent)!.part !== 2);
    expect(moved.map((r) => r.id).sort()).toEqual(onDb.map((c) => c.id).sort());
    for (const child of children) expect((await getOverHttp(child.id)).state).toBe("pending");
  }, 30_000);
});

/** Takes every task of the queue out of DB and delivers it to DB_1, as another isolate's relay step would. */
async function relayBehindTheRoute(queue: string, slot: number, now: number): Promise<void> {
  await takeOutForTransit(shard("DB"), { queue }, { shard: "DB_1", slot }, 100, now);
  const rows = (await listTransit(shard("DB"), 1_000)).filter((r) => r.queue === queue);
  await putInFromTransit(
    shard("DB_1"),
    rows.map((r) => ({ ...r, rowSlot: null })),
  );
  await clearTransit(
    shard("DB"),
    rows.map((r) => r.id),
  );
}

describe("a task moving while it is looked up", () => {
  it("is found by a single-task call that first missed it on the destination and then on the source", async () => {
    const queue = queueOn("DB", "move-race-one");
    const id = await enqueueOne(queue);
    const now = Date.now();
    const placement = await startMove(env, queue, 0, "DB_1", now);
    let calls = 0;
    const task = await onTaskShard(env, id, async (s) => {
      const result = getTask(s.db, id);
      // The copy step runs right after the first candidate (the destination) answered "not here".
      if (calls++ === 0) {
        await result.catch(() => undefined);
        await relayBehindTheRoute(queue, placement.slot, now);
      }
      return result;
    });
    expect(task.id).toBe(id);
  });

  it("is completed by a batch ack that first missed it on the destination and then on the source", async () => {
    const queue = queueOn("DB", "move-race-batch");
    await enqueueOne(queue);
    const [held] = await lease(queue);
    const now = Date.now();
    const placement = await startMove(env, queue, 0, "DB_1", now);
    let calls = 0;
    const outcomes = await ackOnRoute(
      await queueRoute(env, queue, now),
      [{ id: held!.id, leaseToken: held!.lease_token }],
      async (store, items) => {
        const result = await store.completeTasks(items, now, { queue });
        if (calls++ === 0) await relayBehindTheRoute(queue, placement.slot, now);
        return result;
      },
    );
    expect(outcomes).toEqual([expect.objectContaining({ id: held!.id, ok: true })]);
  });

  it("is found by an isolate whose cached placement does not know the move yet", async () => {
    const queue = queueOn("DB", "move-stale-route");
    const id = await enqueueOne(queue);
    const [placement] = await readPlacements(shard("DB"), queue);
    // This isolate caches the partition's placement on DB ...
    const [held] = await lease(queue);
    expect((await getOverHttp(id)).id).toBe(id);
    // ... while another isolate moves the partition to DB_1 and copies its task (this cache is not told).
    await shard("DB").run(sql`UPDATE placements SET shard = 'DB_1' WHERE queue = ${queue} AND part = 0`);
    await relayBehindTheRoute(queue, placement!.slot, Date.now());
    expect((await getOverHttp(id)).id).toBe(id);
    expect((await complete(id, held!.lease_token, null)).body).toMatchObject({ state: "completed" });
  });
});

describe("a move's relayed count", () => {
  it("counts each task of the partition once, though two relays deliver at once and other tasks share the transit table", async () => {
    const queue = queueOn("DB", "move-count");
    await enqueue(queue, { tasks: Array.from({ length: 250 }, (_, i) => ({ payload: i })) });
    const now = Date.now();
    await startMove(env, queue, 0, "DB_1", now);
    await Promise.all([copyAll(queue, 0, now), copyAll(queue, 0, now)]);
    const [placement] = await readPlacements(shard("DB"), queue);
    expect(placement!.moveRelayed).toBe(250);
  });
});
