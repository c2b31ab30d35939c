import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { cancelTask } from "../../src/engine/cancel";
import { idLowerBound, pruneByRetention, purgeTasks } from "../../src/engine/purge";
import { DEFAULT_QUEUE_CONFIG, putQueueConfig } from "../../src/engine/queue-config";
import { T0, db, uniqueQueue, PROCESSORS } from "../helpers";
import { completedTask, deadTask, enqueueOne, leaseOne } from "./fixtures";

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

async function exists(id: string): Promise<boolean> {
  return (await db().get(sql`SELECT 1 AS present FROM tasks WHERE id = ${id}`)) !== undefined;
}

describe("purgeTasks", () => {
  it("deletes finished tasks finished before `before`, keeping live and newer ones", async () => {
    const queue = uniqueQueue();
    const completed = await completedTask(queue); // finished T0 + 1
    const dead = await deadTask(queue, {}, T0 + 10); // finished T0 + 11
    const cancelled = await enqueueOne(queue, {}, T0 + 20);
    await cancelTask(db(), cancelled, T0 + 21);
    const newer = await completedTask(queue, {}, T0 + 5_000); // finished T0 + 5_001
    const pending = await enqueueOne(queue, { runAt: T0 + DAY_MS }, T0 + 30);
    const processing = await enqueueOne(queue, {}, T0 + 40);
    expect((await leaseOne(queue, T0 + 40)).id).toBe(processing);
    const otherQueueDone = await completedTask(uniqueQueue());

    const { purged } = await purgeTasks(db(), queue, { before: T0 + 5_001 });
    expect(purged).toBe(3);
    expect(await exists(completed)).toBe(false);
    expect(await exists(dead)).toBe(false);
    expect(await exists(cancelled)).toBe(false);
    // finished_at must be strictly before `before`.
    expect(await exists(newer)).toBe(true);
    expect(await exists(pending)).toBe(true);
    expect(await exists(processing)).toBe(true);
    expect(await exists(otherQueueDone)).toBe(true);

    // Live tasks survive any cutoff.
    await purgeTasks(db(), queue, { before: T0 + 365 * DAY_MS });
    expect(await exists(newer)).toBe(false);
    expect(await exists(pending)).toBe(true);
    expect(await exists(processing)).toBe(true);
  });

  it("deletes only the given states, and at most `limit`", async () => {
    const queue = uniqueQueue();
    const dead = await deadTask(queue);
    const done1 = await completedTask(queue, {}, T0 + 10);
    const done2 = await completedTask(queue, {}, T0 + 20);
    expect(await purgeTasks(db(), queue, { before: T0 + HOUR_MS, states: ["dead"] })).toEqual({ purged: 1 });
    expect(await exists(dead)).toBe(false);
    expect(await purgeTasks(db(), queue, { before: T0 + HOUR_MS, limit: 1 })).toEqual({ purged: 1 });
    expect([await exists(done1), await exists(done2)].filter(Boolean)).toHaveLength(1);
  });

  it("keys the id bound to the time: every id created before `before` sorts below it", async () => {
    const queue = uniqueQueue();
    const id = await enqueueOne(queue, {}, T0 + 123);
    expect(id < idLowerBound(T0 + 124)).toBe(true);
    expect(id < idLowerBound(T0 + 123)).toBe(false);
  });
});

describe("pruneByRetention", () => {
  it("honours each queue's retention_s and the default for unconfigured queues", async () => {
    const short = uniqueQueue();
    const unconfigured = uniqueQueue();
    await putQueueConfig(db(), short, { retention_s: 3600 }, T0, PROCESSORS);
    const shortDone = await completedTask(short); // finished T0 + 1
    const shortLive = await enqueueOne(short, { runAt: T0 + 365 * DAY_MS });
    const defaultDone = await completedTask(unconfigured); // finished T0 + 1
    const retentionMs = DEFAULT_QUEUE_CONFIG.retention_s * 1000;

    // Exactly at the retention boundary: kept (finished_at must be strictly older).
    await pruneByRetention(db(), T0 + 1 + HOUR_MS);
    expect(await exists(shortDone)).toBe(true);

    await pruneByRetention(db(), T0 + 2 + HOUR_MS);
    expect(await exists(shortDone)).toBe(false);
    expect(await exists(defaultDone)).toBe(true);
    expect(await exists(shortLive)).toBe(true);

    await pruneByRetention(db(), T0 + 1 + retentionMs);
    expect(await exists(defaultDone)).toBe(true);
    const { pruned } = await pruneByRetention(db(), T0 + 2 + retentionMs);
    expect(pruned).toBeGreaterThanOrEqual(1);
    expect(await exists(defaultDone)).toBe(false);
    expect(await exists(shortLive)).toBe(true);
  });

  it("keeps a queue's tasks longer when its retention is longer than the default", async () => {
    const long = uniqueQueue();
    await putQueueConfig(db(), long, { retention_s: 30 * 24 * 3600 }, T0, PROCESSORS);
    const done = await completedTask(long);
    await pruneByRetention(db(), T0 + 10 * DAY_MS);
    expect(await exists(done)).toBe(true);
    await pruneByRetention(db(), T0 + 31 * DAY_MS);
    expect(await exists(done)).toBe(false);
  });
});
