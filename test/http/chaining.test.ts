import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { MAX_PAYLOAD_BYTES } from "../../src/contracts/limits";
import { allRows, snapshot, uniqueQueue } from "../helpers";
import {
  call,
  complete,
  enqueueOne,
  expectError,
  expireLease,
  fail,
  getTask,
  leaseOne,
  type AckResults,
  type Task,
} from "./api";
import { body, enqueuePath, rejects } from "./validation-cases";

/** The tasks whose payload names `parentId` as their parent, i.e. the children its completion enqueued. */
async function childrenOf(parentId: string): Promise<string[]> {
  // A child of another queue may be on its way to that queue's shard (task_transit) for a moment.
  const rows = await allRows<{ id: string }>(
    sql`SELECT id FROM tasks WHERE json_extract(payload, '$.parent.id') = ${parentId}
      UNION ALL SELECT id FROM task_transit WHERE json_extract(row ->> 'payload', '$.parent.id') = ${parentId}`,
  );
  return rows.map((r) => r.id).sort();
}

/** How many tasks the given queues hold, all states. */
async function countTasks(...queues: string[]): Promise<number> {
  const rows = await allRows<{ n: number }>(
    sql`SELECT (SELECT count(*) FROM tasks WHERE queue IN (SELECT value FROM json_each(${JSON.stringify(queues)})))
      + (SELECT count(*) FROM task_transit WHERE queue IN (SELECT value FROM json_each(${JSON.stringify(queues)}))) AS n`,
  );
  return rows.reduce((n, r) => n + r.n, 0);
}

/** A chain `levels` deep: each level one child of type `l{n}`, the deepest with no `then`. */
function chain(levels: number): Array<Record<string, unknown>> {
  let then: Array<Record<string, unknown>> | undefined;
  for (let level = levels; level >= 1; level--) then = [{ type: `l${level}`, ...(then ? { then } : {}) }];
  return then!;
}

describe("then: children enqueued by a completion", () => {
  it("enqueues every child on complete, with the parent's result, inheriting group and priority unless overridden", async () => {
    const queue = uniqueQueue("chain");
    const other = uniqueQueue("chain-other");
    expect((await call("PUT", `/v1/queues/${other}/config`, { body: { max_attempts: 6 } })).status).toBe(200);
    const parentId = await enqueueOne(queue, {
      type: "scan",
      payload: { url: "https://example.com" },
      group: "g1",
      priority: 5,
      max_attempts: 9,
      then: [
        { type: "enrich", queue: other, priority: 9, payload: { k: 1 } },
        { type: "publish", payload: { p: 2 }, then: [{ type: "notify" }] },
      ],
    });
    const leased = await leaseOne(queue);
    expect(leased.id).toBe(parentId);
    // Nothing is enqueued before the parent completes.
    expect(await countTasks(queue, other)).toBe(1);

    const done = await complete(parentId, leased.lease_token, { found: 3 });
    expect(done.status, done.text).toBe(200);
    expect(done.body).toMatchObject({ id: parentId, state: "completed", run_at: null });
    expect(done.body.children).toHaveLength(2);
    expect([...done.body.children].sort()).toEqual(await childrenOf(parentId));
    expect(await countTasks(queue, other)).toBe(3);

    const children = await Promise.all(done.body.children.map((id) => getTask(id)));
    const byType = new Map(children.map((t) => [t.type, t]));
    const parent = { id: parentId, type: "scan", result: { found: 3 } };
    expect(byType.get("enrich")).toMatchObject({
      queue: other,
      state: "pending",
      priority: 9,
      group: "g1",
      attempts: 0,
      max_attempts: 6,
      payload: { k: 1, parent },
      then: null,
    });
    expect(byType.get("publish")).toMatchObject({
      queue,
      state: "pending",
      priority: 5,
      group: "g1",
      attempts: 0,
      max_attempts: 3,
      payload: { p: 2, parent },
      then: [{ type: "notify" }],
    });
    // The parent itself is completed and keeps its result.
    expect(await getTask(parentId)).toMatchObject({ state: "completed", result: { found: 3 } });

    // The queue override is honoured by leasing: each child is leased from its own queue.
    const enrich = await leaseOne(other);
    expect(enrich.id).toBe(byType.get("enrich")!.id);
    const enriched = await complete(enrich.id, enrich.lease_token, "ok");
    expect(enriched.body).toEqual({ id: enrich.id, state: "completed", run_at: null, children: [], repeated: false });

    // Completing the child that has its own `then` enqueues the grandchild, with that child as parent.
    const publish = await leaseOne(queue);
    expect(publish.id).toBe(byType.get("publish")!.id);
    const published = await complete(publish.id, publish.lease_token, { published: true });
    expect(published.status).toBe(200);
    expect(published.body.children).toHaveLength(1);
    const grandchild = await getTask(published.body.children[0]!);
    expect(grandchild).toMatchObject({
      queue,
      type: "notify",
      state: "pending",
      priority: 5,
      group: "g1",
      payload: { parent: { id: publish.id, type: "publish", result: { published: true } } },
      then: null,
    });
    expect(Object.keys(grandchild.payload as object)).toEqual(["parent"]);
    expect(await countTasks(queue, other)).toBe(4);
  });

  it("gives a child a null parent result when the parent completes without one, and honours delay_s and max_attempts", async () => {
    const queue = uniqueQueue("chain");
    const parentId = await enqueueOne(queue, {
      type: "scan",
      then: [{ type: "later", delay_s: 3600, max_attempts: 7, group: "own", dedupe_key: "d1" }],
    });
    const leased = await leaseOne(queue);
    const before = Date.now();
    const done = await complete(parentId, leased.lease_token);
    expect(done.body.children).toHaveLength(1);
    const child = await getTask(done.body.children[0]!);
    expect(child).toMatchObject({
      state: "pending",
      type: "later",
      group: "own",
      dedupe_key: "d1",
      max_attempts: 7,
      payload: { parent: { id: parentId, type: "scan", result: null } },
    });
    expect(Date.parse(child.run_at)).toBeGreaterThanOrEqual(before + 3_600_000 - 1_000);
    // Delayed: not leasable yet.
    expect((await call<{ tasks: Task[] }>("POST", `/v1/queues/${queue}/lease`, { body: {} })).body.tasks).toEqual([]);
  });

  it("lists each parent's own children in a batch ack", async () => {
    const queue = uniqueQueue("chain");
    const a = await enqueueOne(queue, { type: "a", priority: 2, then: [{ type: "a-child" }] });
    const b = await enqueueOne(queue, { type: "b", priority: 1, then: [{ type: "b-child" }, { type: "b-child" }] });
    const c = await enqueueOne(queue, { type: "c" });
    const la = await leaseOne(queue);
    const lb = await leaseOne(queue);
    const lc = await leaseOne(queue);
    expect([la.id, lb.id, lc.id]).toEqual([a, b, c]);
    const res = await call<AckResults>("POST", `/v1/queues/${queue}/ack`, {
      body: {
        complete: [
          { id: a, lease_token: la.lease_token, result: "A" },
          { id: b, lease_token: lb.lease_token, result: "B" },
          { id: c, lease_token: lc.lease_token, result: "C" },
        ],
      },
    });
    expect(res.status).toBe(200);
    const [ra, rb, rc] = res.body.results;
    expect(ra).toMatchObject({ id: a, ok: true, state: "completed" });
    expect(rb).toMatchObject({ id: b, ok: true, state: "completed" });
    expect(rc).toEqual({ id: c, ok: true, state: "completed", children: [], repeated: false });
    expect([...ra!.children!].sort()).toEqual(await childrenOf(a));
    expect([...rb!.children!].sort()).toEqual(await childrenOf(b));
    expect(ra!.children).toHaveLength(1);
    expect(rb!.children).toHaveLength(2);
    for (const id of rb!.children!) {
      expect(await getTask(id)).toMatchObject({ type: "b-child", payload: { parent: { id: b, result: "B" } } });
    }
  });

  it("wakes a long-poll lease waiting on the child's queue", async () => {
    const queue = uniqueQueue("chain");
    const other = uniqueQueue("chain-other");
    const parentId = await enqueueOne(queue, { then: [{ type: "next", queue: other }] });
    const leased = await leaseOne(queue);
    const started = Date.now();
    const waiting = call<{ tasks: Task[] }>("POST", `/v1/queues/${other}/lease`, { body: { wait_s: 10 } });
    // Complete only once the request is parked in the coordinator, so only the completion's wake-up can answer it.
    const coordinator = env.COORDINATOR.get(env.COORDINATOR.idFromName(other));
    for (let i = 0; (await coordinator.waiting()) === 0; i++) {
      expect(i, "the lease never reached the coordinator").toBeLessThan(1000);
      await scheduler.wait(5);
    }
    const done = await complete(parentId, leased.lease_token, "go");
    expect(done.body.children).toHaveLength(1);
    const res = await waiting;
    expect(res.body.tasks.map((t) => t.id)).toEqual(done.body.children);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("does not enqueue a child twice while one with its dedupe_key is live", async () => {
    const queue = uniqueQueue("chain");
    const spec = { then: [{ type: "once", dedupe_key: "shared" }] };
    const p1 = await enqueueOne(queue, { ...spec, priority: 2 });
    const p2 = await enqueueOne(queue, { ...spec, priority: 1 });
    const l1 = await leaseOne(queue);
    const l2 = await leaseOne(queue);
    expect([l1.id, l2.id]).toEqual([p1, p2]);
    expect((await complete(p1, l1.lease_token)).body.children).toHaveLength(1);
    const second = await complete(p2, l2.lease_token);
    expect(second.body).toEqual({ id: p2, state: "completed", run_at: null, children: [], repeated: false });
    expect(await childrenOf(p2)).toEqual([]);
    expect(await countTasks(queue)).toBe(3);
  });
});

describe("then: no children unless the parent really completed", () => {
  it("enqueues none when the parent fails, retries and dies", async () => {
    const queue = uniqueQueue("chain");
    const other = uniqueQueue("chain-other");
    const id = await enqueueOne(queue, { max_attempts: 2, then: [{ type: "x" }, { type: "y", queue: other }] });
    const first = await leaseOne(queue);
    const retry = await fail(id, { lease_token: first.lease_token, error: "boom", retry_after_s: 0 });
    expect(retry.body).toMatchObject({ id, state: "pending", children: [], repeated: false });
    const second = await leaseOne(queue);
    const dead = await fail(id, { lease_token: second.lease_token, error: "boom again" });
    expect(dead.body).toEqual({ id, state: "dead", run_at: null, children: [], repeated: false });
    expect(await countTasks(queue, other)).toBe(1);
    expect(await childrenOf(id)).toEqual([]);
    // The dead task keeps its chain as stored (GET shows it).
    expect((await getTask(id)).then).toEqual([{ type: "x" }, { type: "y", queue: other }]);
  });

  it("enqueues none for a permanent failure through the ack route", async () => {
    const queue = uniqueQueue("chain");
    const id = await enqueueOne(queue, { then: [{ type: "x" }] });
    const leased = await leaseOne(queue);
    const res = await call<AckResults>("POST", `/v1/queues/${queue}/ack`, {
      body: { fail: [{ id, lease_token: leased.lease_token, error: "bad", retryable: false }] },
    });
    expect(res.body.results).toEqual([{ id, ok: true, state: "dead", children: [], repeated: false }]);
    expect(await countTasks(queue)).toBe(1);
  });

  it("enqueues none for a stale or expired token, and exactly once for the real completion", async () => {
    const queue = uniqueQueue("chain");
    const id = await enqueueOne(queue, { then: [{ type: "x" }] });
    const leased = await leaseOne(queue);
    expectError(await complete(id, "stale-token", 1), 409, "lease_lost");
    expect(await countTasks(queue)).toBe(1);

    const done = await complete(id, leased.lease_token, 1);
    expect(done.body.children).toHaveLength(1);
    // Repeating the completion with the same (now spent) token is a repeat: told so, and adds nothing.
    expect((await complete(id, leased.lease_token, 1)).body).toMatchObject({
      repeated: true,
      children: [],
    });
    const batch = await call<AckResults>("POST", `/v1/queues/${queue}/ack`, {
      body: { complete: [{ id, lease_token: leased.lease_token }] },
    });
    expect(batch.body.results).toEqual([{ id, ok: true, state: "completed", children: [], repeated: true }]);
    expect(await childrenOf(id)).toEqual(done.body.children);
    expect(await countTasks(queue)).toBe(2);

    const expiring = await enqueueOne(queue, { priority: 10, then: [{ type: "x" }] });
    const lease2 = await leaseOne(queue);
    expect(lease2.id).toBe(expiring);
    await expireLease(expiring);
    expectError(await complete(expiring, lease2.lease_token, 1), 409, "lease_lost");
    expect(await childrenOf(expiring)).toEqual([]);
    expect(await countTasks(queue)).toBe(3);
  });

  it("enqueues none when the parent was cancelled while processing (409 task_cancelled)", async () => {
    const queue = uniqueQueue("chain");
    const id = await enqueueOne(queue, { then: [{ type: "x" }] });
    const leased = await leaseOne(queue);
    const cancel = await call<Task>("POST", `/v1/tasks/${id}/cancel`);
    expect(cancel.body).toMatchObject({ state: "processing", cancel_requested: true });
    expectError(await complete(id, leased.lease_token, { late: true }), 409, "task_cancelled");
    expect(await getTask(id)).toMatchObject({ state: "cancelled", result: null });
    expect(await childrenOf(id)).toEqual([]);
    expect(await countTasks(queue)).toBe(1);
  });
});

describe("then: the chain is stored as given and validated at enqueue", () => {
  it("accepts a chain five levels deep and stores it", async () => {
    const queue = uniqueQueue("chain");
    const id = await enqueueOne(queue, { then: chain(5) });
    expect((await getTask(id)).then).toEqual(chain(5));
  });

  it("validates every task of a batch, naming the task's index", async () => {
    const queue = uniqueQueue("chain");
    const res = await call("POST", `/v1/queues/${queue}/tasks`, {
      body: { tasks: [{ then: [{ type: "ok" }] }, { then: [{ type: "ok", then: [{ payload: {} }] }] }] },
    });
    expectError(res, 400, "invalid_request", /^tasks\[1\]\.then\[0\]\.then\[0\]\.type: /);
    expect(await snapshot(queue)).toEqual([]);
  });

  it("rejects a chain whose JSON, with the payload, exceeds the payload limit (413), enqueuing nothing", async () => {
    const queue = uniqueQueue("chain");
    const big = "x".repeat(MAX_PAYLOAD_BYTES / 2);
    const res = await call("POST", `/v1/queues/${queue}/tasks`, {
      body: { payload: { text: big }, then: [{ type: "x", payload: { text: big } }] },
    });
    expectError(res, 413, "payload_too_large", new RegExp(`${MAX_PAYLOAD_BYTES} bytes`));
    expect(await snapshot(queue)).toEqual([]);
  });

  const eleven = Array.from({ length: 11 }, () => ({ type: "x" }));
  rejects([
    {
      label: "a child without a type",
      method: "POST",
      path: enqueuePath,
      opts: body({ then: [{}] }),
      message: /^then\[0\]\.type: /,
    },
    {
      label: "a child whose payload is not an object",
      method: "POST",
      path: enqueuePath,
      opts: body({ then: [{ type: "x", payload: 5 }] }),
      message: /^then\[0\]\.payload: /,
    },
    {
      label: "a child whose payload is an array",
      method: "POST",
      path: enqueuePath,
      opts: body({ then: [{ type: "x", payload: [1] }] }),
      message: /^then\[0\]\.payload: /,
    },
    {
      label: "a nested child without a type",
      method: "POST",
      path: enqueuePath,
      opts: body({ then: [{ type: "x", then: [{ payload: {} }] }] }),
      message: /^then\[0\]\.then\[0\]\.type: /,
    },
    {
      label: "a nested child whose payload is not an object, two levels down",
      method: "POST",
      path: enqueuePath,
      opts: body({ then: [{ type: "x", then: [{ type: "y", then: [{ type: "z", payload: "s" }] }] }] }),
      message: /^then\[0\]\.then\[0\]\.then\[0\]\.payload: /,
    },
    {
      label: "more than 10 children",
      method: "POST",
      path: enqueuePath,
      opts: body({ then: eleven }),
      message: /^then: /,
    },
    {
      label: "more than 10 nested children",
      method: "POST",
      path: enqueuePath,
      opts: body({ then: [{ type: "x", then: eleven }] }),
      message: /^then\[0\]\.then: /,
    },
    {
      label: "a chain six levels deep",
      method: "POST",
      path: enqueuePath,
      opts: body({ then: chain(6) }),
      message: /^then\[0\]\.then\[0\]\.then\[0\]\.then\[0\]\.then\[0\]\.then: .*5 levels/,
    },
    {
      label: "a child with an unknown field",
      method: "POST",
      path: enqueuePath,
      opts: body({ then: [{ type: "x", run_at: "2030-01-01T00:00:00Z" }] }),
      message: /^then\[0\]: .*run_at/,
    },
    {
      label: "a child with a bad queue name",
      method: "POST",
      path: enqueuePath,
      opts: body({ then: [{ type: "x", queue: "no spaces" }] }),
      message: /^then\[0\]\.queue: /,
    },
    {
      label: "then that is not a list",
      method: "POST",
      path: enqueuePath,
      opts: body({ then: { type: "x" } }),
      message: /^then: /,
    },
  ]);
});
