import { describe, expect, it } from "vitest";
import { DEFAULT_QUEUE_CONFIG as ENGINE_DEFAULTS } from "../../src/engine/queue-config";
import { snapshot, uniqueQueue } from "../helpers";
import {
  call,
  complete,
  deadTask,
  enqueue,
  enqueueOne,
  expectError,
  getTask,
  ISO,
  lease,
  leaseOne,
  type Task,
} from "./api";

/** The config as the API shows it: the stored config and the partition count (one by default). */
const DEFAULT_QUEUE_CONFIG = { ...ENGINE_DEFAULTS, partitions: 1 };

interface Page {
  tasks: Task[];
  next_cursor: string | null;
}
interface Stats {
  queue: string;
  counts: Record<string, number>;
  due: number;
  oldest_due_at: string | null;
  flow: unknown;
}

const noCounts = { pending: 0, waiting: 0, processing: 0, completed: 0, dead: 0, cancelled: 0, expired: 0 };

/** The stats' flow control of a queue with no keyed tasks and no pause (the whole queue's, whatever group). */
const noFlow = { paused: false, keys: [] };

describe("listing tasks", () => {
  it("walks every task exactly once, in creation order, with limit and cursor", async () => {
    const queue = uniqueQueue("list");
    const ids = (await enqueue(queue, { tasks: Array.from({ length: 7 }, (_, i) => ({ payload: i })) })).map(
      (t) => t.id,
    );
    const seen: string[] = [];
    const sizes: number[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < 10; page++) {
      const query: string = cursor === null ? "?limit=3" : `?limit=3&cursor=${cursor}`;
      const res = await call<Page>("GET", `/v1/queues/${queue}/tasks${query}`);
      expect(res.status).toBe(200);
      seen.push(...res.body.tasks.map((t) => t.id));
      sizes.push(res.body.tasks.length);
      cursor = res.body.next_cursor;
      if (cursor === null) break;
    }
    expect(sizes).toEqual([3, 3, 1]);
    expect(seen).toEqual(ids);
  });

  it("ends with a null cursor when the last page is exactly full", async () => {
    const queue = uniqueQueue("list");
    await enqueue(queue, { tasks: [{}, {}] });
    const res = await call<Page>("GET", `/v1/queues/${queue}/tasks?limit=2`);
    expect([res.body.tasks.length, res.body.next_cursor]).toEqual([2, null]);
  });

  it("filters by state, group and type, and never shows another queue's tasks", async () => {
    const queue = uniqueQueue("list");
    const other = uniqueQueue("list");
    await enqueueOne(other);
    const [a, b, c] = await enqueue(queue, {
      tasks: [
        { group: "g1", type: "resize", priority: 1 },
        { group: "g2", type: "resize" },
        { group: "g1", type: "email" },
      ],
    });
    expect((await leaseOne(queue)).id).toBe(a!.id);
    const ids = async (query: string) =>
      (await call<Page>("GET", `/v1/queues/${queue}/tasks${query}`)).body.tasks.map((t) => t.id);
    expect(await ids("")).toEqual([a!.id, b!.id, c!.id]);
    expect(await ids("?state=processing")).toEqual([a!.id]);
    expect(await ids("?state=pending&group=g1")).toEqual([c!.id]);
    expect(await ids("?type=resize")).toEqual([a!.id, b!.id]);
    expect(await ids("?state=dead")).toEqual([]);
  });
});

describe("stats and the queue list", () => {
  it("counts tasks per state, due work and its age, optionally for one group", async () => {
    const queue = uniqueQueue("stats");
    await deadTask(queue, { group: "g" });
    const done = await enqueueOne(queue, { priority: 5 });
    await complete(done, (await leaseOne(queue)).lease_token);
    await enqueueOne(queue, { priority: 5, group: "g" });
    await leaseOne(queue);
    const oldest = "2025-06-01T00:00:00.000Z";
    await enqueueOne(queue, { run_at: oldest, group: "g" });
    await enqueueOne(queue);
    await enqueueOne(queue, { delay_s: 3600 });
    const cancelled = await enqueueOne(queue, { delay_s: 3600 });
    await call("POST", `/v1/tasks/${cancelled}/cancel`);

    const all = await call<Stats>("GET", `/v1/queues/${queue}/stats`);
    expect(all.status).toBe(200);
    expect(all.body).toEqual({
      queue,
      counts: { pending: 3, waiting: 0, processing: 1, completed: 1, dead: 1, cancelled: 1, expired: 0 },
      due: 2,
      oldest_due_at: oldest,
      flow: noFlow,
    });
    const group = await call<Stats>("GET", `/v1/queues/${queue}/stats?group=g`);
    expect(group.body).toEqual({
      queue,
      counts: { ...noCounts, pending: 1, processing: 1, dead: 1 },
      due: 1,
      oldest_due_at: oldest,
      flow: noFlow,
    });
  });

  it("reports an unknown queue as empty", async () => {
    const queue = uniqueQueue("stats");
    const res = await call<Stats>("GET", `/v1/queues/${queue}/stats`);
    expect(res.body).toEqual({ queue, counts: noCounts, due: 0, oldest_due_at: null, flow: noFlow });
  });

  it("lists queues with tasks or a stored config, with their counts", async () => {
    const busy = uniqueQueue("ql");
    const configured = uniqueQueue("ql");
    await enqueue(busy, { tasks: [{}, {}] });
    await leaseOne(busy);
    await call("PUT", `/v1/queues/${configured}/config`, { body: { max_attempts: 4 } });
    const res = await call<{ queues: Array<{ queue: string; counts: Record<string, number> }> }>("GET", "/v1/queues");
    expect(res.status).toBe(200);
    expect(res.body.queues).toContainEqual({ queue: busy, counts: { ...noCounts, pending: 1, processing: 1 } });
    expect(res.body.queues).toContainEqual({ queue: configured, counts: noCounts });
    const names = res.body.queues.map((q) => q.queue);
    expect(names).toEqual([...names].sort((x, y) => x.localeCompare(y)));
  });
});

describe("queue config", () => {
  it("shows the defaults, stores a partial update, and applies it to new tasks and leases", async () => {
    const queue = uniqueQueue("cfg");
    const defaults = await call("GET", `/v1/queues/${queue}/config`);
    expect([defaults.status, defaults.body]).toEqual([200, DEFAULT_QUEUE_CONFIG]);

    const put = await call("PUT", `/v1/queues/${queue}/config`, {
      body: { max_attempts: 5, visibility_timeout_s: 120 },
    });
    const expected = { ...DEFAULT_QUEUE_CONFIG, max_attempts: 5, visibility_timeout_s: 120 };
    expect([put.status, put.body]).toEqual([200, expected]);
    const second = await call("PUT", `/v1/queues/${queue}/config`, { body: { retention_s: 3600 } });
    expect(second.body).toEqual({ ...expected, retention_s: 3600 });
    expect((await call("GET", `/v1/queues/${queue}/config`)).body).toEqual({ ...expected, retention_s: 3600 });

    const id = await enqueueOne(queue);
    expect((await getTask(id)).max_attempts).toBe(5);
    const t0 = Date.now();
    const leased = await leaseOne(queue);
    expect(Date.parse(leased.lease_expires_at!)).toBeGreaterThanOrEqual(t0 + 120_000);
    expect(Date.parse(leased.lease_expires_at!)).toBeLessThanOrEqual(Date.now() + 120_000);
  });

  it("rejects a cap below the base with 400 naming backoff_cap_s, storing nothing", async () => {
    const queue = uniqueQueue("cfg");
    const res = await call("PUT", `/v1/queues/${queue}/config`, { body: { backoff_base_s: 7200 } });
    expectError(res, 400, "invalid_request", /^backoff_cap_s \(3600\) must be at least backoff_base_s \(7200\)/);
    expect((await call("GET", `/v1/queues/${queue}/config`)).body).toEqual(DEFAULT_QUEUE_CONFIG);
    const queues = await call<{ queues: Array<{ queue: string }> }>("GET", "/v1/queues");
    expect(queues.body.queues.map((q) => q.queue)).not.toContain(queue);
  });
});

describe("purge", () => {
  it("deletes finished tasks before a time, optionally of some states, and never live ones", async () => {
    const queue = uniqueQueue("purge");
    const dead = await deadTask(queue);
    const [c1, c2] = await enqueue(queue, { tasks: [{ priority: 2 }, { priority: 1 }] });
    for (const t of await lease(queue, { max: 2 })) await complete(t.id, t.lease_token);
    const live = await enqueueOne(queue);
    const future = new Date(Date.now() + 60_000).toISOString();

    const recent = await call("POST", `/v1/queues/${queue}/purge`, { body: { older_than_s: 3600 } });
    expect([recent.status, recent.body]).toEqual([200, { purged: 0 }]);
    expect(await snapshot(queue)).toHaveLength(4);

    const completed = await call("POST", `/v1/queues/${queue}/purge`, {
      body: { before: future, states: ["completed"] },
    });
    expect(completed.body).toEqual({ purged: 2 });
    for (const id of [c1!.id, c2!.id]) expect((await call("GET", `/v1/tasks/${id}`)).status).toBe(404);
    expect((await getTask(dead)).state).toBe("dead");

    const rest = await call("POST", `/v1/queues/${queue}/purge`, { body: { before: future } });
    expect(rest.body).toEqual({ purged: 1 });
    const left = await call<Page>("GET", `/v1/queues/${queue}/tasks`);
    expect(left.body.tasks.map((t) => [t.id, t.state])).toEqual([[live, "pending"]]);
    expect(left.body.tasks[0]!.created_at).toMatch(ISO);
  });
});
