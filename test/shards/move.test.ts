import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { readPlacements } from "../../src/shards/directory";
import { startMove } from "../../src/shards/move";
import { advanceMove } from "../../src/shards/relay";
import { decodeSlot } from "../../src/shards/task-slot";
import { copyAll, idsOn, queueOn, shard } from "./support";
import { call as sqsCall, sqsRequest } from "../sqs/signed-request";
import { call, complete, enqueue, expectError, lease } from "../http/api";

interface PlacementBody {
  partitions: Array<{ part: number; shard: string; move: { from: string; left_on_source: number } | null }>;
}

describe("a move's placement view", () => {
  it("counts left_on_source for the moving partition only, not another partition on the same shard", async () => {
    const queue = queueOn("DB", "move-parts");
    // Partitions take the ranking in turn: 0 on DB, 1 on DB_1, 2 on DB again.
    expect((await call("PUT", `/v1/queues/${queue}/config`, { body: { partitions: 3 } })).status).toBe(200);
    const ids = (await enqueue(queue, { tasks: Array.from({ length: 30 }, (_, i) => ({ payload: i })) })).map(
      (t) => t.id,
    );
    const placements = await readPlacements(shard("DB"), queue);
    expect(placements.map((p) => p.shard)).toEqual(["DB", "DB_1", "DB"]);
    const ofPart = (part: number) => ids.filter((id) => decodeSlot(id) === placements[part]!.slot).length;
    expect(ofPart(0)).toBeGreaterThan(0);
    expect(ofPart(2)).toBeGreaterThan(0);

    const now = Date.now();
    await startMove(env, queue, 2, "DB_1", now);
    const moving = await call<PlacementBody>("GET", `/v1/queues/${queue}/placement`);
    expect(moving.body.partitions.map((p) => [p.part, p.shard, p.move?.left_on_source ?? null])).toEqual([
      [0, "DB", null],
      [1, "DB_1", null],
      [2, "DB_1", ofPart(2)],
    ]);

    await copyAll(queue, 2, now);
    const copied = await call<PlacementBody>("GET", `/v1/queues/${queue}/placement`);
    expect(copied.body.partitions[2]!.move).toMatchObject({ from: "DB", left_on_source: 0 });
    // Partition 0's tasks stayed where they are.
    expect(await idsOn("DB", queue)).toHaveLength(ofPart(0));
  });
});

describe("task_moving", () => {
  // It can happen: a task is in transit from the moment a relay step takes it out of the old shard until
  // that step delivers it to the new one — a few statements, milliseconds, each 100-task chunk — or, after a
  // crash between the two, until the next relay pass delivers it. A call on it meanwhile answers 503.
  it("answers a holder's call on a task in transit 503 task_moving (its batch ack item too); the lease works once it lands", async () => {
    const queue = queueOn("DB", "move-transit");
    await enqueue(queue, { tasks: [{ payload: 1 }, { payload: 2 }] });
    const [a, b] = await lease(queue, { max: 2 });
    const now = Date.now();
    await startMove(env, queue, 0, "DB_1", now);
    const [moving] = await readPlacements(shard("DB"), queue);
    // The copy step takes both out of DB and crashes before delivering them (fault injected).
    await expect(advanceMove(env, moving!, now, { maxSteps: 1, faults: { crashAfterTakeOut: true } })).rejects.toThrow(
      /injected crash/,
    );

    const single = await call("POST", `/v1/tasks/${a!.id}/complete`, {
      body: { lease_token: a!.lease_token, result: "a" },
    });
    expectError(single, 503, "task_moving");
    expect(single.headers.get("Retry-After")).toBe("1");
    const batch = await call<{ results: Array<{ id: string; ok: boolean; error?: { code: string } }> }>(
      "POST",
      `/v1/queues/${queue}/ack`,
      { body: { complete: [{ id: b!.id, lease_token: b!.lease_token }] } },
    );
    expect(batch.status).toBe(200);
    expect(batch.body.results).toEqual([
      expect.objectContaining({ id: b!.id, ok: false, error: expect.objectContaining({ code: "task_moving" }) }),
    ]);

    // The next relay pass delivers them; the same leases then complete on the new shard.
    await copyAll(queue, 0, now);
    expect((await complete(a!.id, a!.lease_token, "a")).body).toMatchObject({ state: "completed" });
    expect((await complete(b!.id, b!.lease_token, "b")).body).toMatchObject({ state: "completed" });
  });
});

describe("a queue's settings on a move", () => {
  it("keeps its config, SQS attributes and tags when partition 0 moves to another database", async () => {
    const queue = queueOn("DB", "move-sqs");
    const sqs = async (operation: string, input: unknown) => sqsCall(await sqsRequest(operation, input));
    const created = await sqs("CreateQueue", {
      QueueName: queue,
      Attributes: { DelaySeconds: "7", ReceiveMessageWaitTimeSeconds: "3", VisibilityTimeout: "45" },
      tags: { team: "growth" },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const url = created.body.QueueUrl as string;
    await sqs("TagQueue", { QueueUrl: url, Tags: { env: "prod" } });
    expect((await call("PUT", `/v1/queues/${queue}/config`, { body: { max_attempts: 9 } })).status).toBe(200);
    expect((await readPlacements(shard("DB"), queue))[0]!.shard).toBe("DB");
    const attributes = async () =>
      (await sqs("GetQueueAttributes", { QueueUrl: url, AttributeNames: ["All"] })).body.Attributes as Record<
        string,
        string
      >;
    const before = await attributes();

    const moved = await call("POST", `/v1/queues/${queue}/move`, { body: { shard: "DB_1" } });
    expect(moved.status).toBe(202);
    expect((await readPlacements(shard("DB"), queue))[0]).toMatchObject({ shard: "DB_1", movingFrom: "DB" });

    expect((await sqs("ListQueueTags", { QueueUrl: url })).body).toEqual({ Tags: { team: "growth", env: "prod" } });
    const after = await attributes();
    expect(after).toMatchObject({ DelaySeconds: "7", ReceiveMessageWaitTimeSeconds: "3", VisibilityTimeout: "45" });
    expect(after).toEqual(before);
    const config = await call<{ max_attempts: number; visibility_timeout_s: number }>(
      "GET",
      `/v1/queues/${queue}/config`,
    );
    expect(config.body).toMatchObject({ max_attempts: 9, visibility_timeout_s: 45 });
  });
});
