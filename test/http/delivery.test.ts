import { runDurableObjectAlarm } from "cloudflare:test";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { row, taskDb, uniqueQueue } from "../helpers";
import {
  call,
  complete,
  enqueueOne,
  expectError,
  expireLease,
  fail,
  lease,
  leaseOne,
  type AckResults,
  type Outcome,
} from "./api";
import { coordinator, untilWaiting } from "../support/coordinator";

/** What CLAIM_WINDOW_S passing does to a provisional lease, without waiting 10 s: its claim_by is past. */
async function lapseClaim(id: string): Promise<void> {
  await (
    await taskDb(id)
  ).run(sql`UPDATE tasks SET claim_by = ${Date.now() - 1} WHERE id = ${id} AND claim_by IS NOT NULL`);
}

describe("long polls whose client is gone (issue 8.1)", () => {
  it("where hang-ups go unseen (wrangler dev), a task handed to gone long polls is leasable again after the claim window, its attempts refunded", async () => {
    const queue = uniqueQueue("hangup");
    // A long poll as the lease route makes it where the Worker never hears of a hang-up (`npm start`; the
    // tests run in workerd, which reports them: the route would pass hangUpReported true).
    const unseen = (holder: string) =>
      coordinator(queue).lease({
        queue,
        max: 1,
        visibilityTimeoutS: null,
        holder,
        waitMs: 10_000,
        hangUpReported: false,
      });
    // Client 1 waits and is answered with the task — but had hung up (nothing tells the Worker).
    const first = unseen("gone-1");
    await untilWaiting(queue, 1);
    const id = await enqueueOne(queue, { payload: "work", max_attempts: 2 });
    const [toFirst] = await first;
    expect(toFirst).toMatchObject({ id, attempts: 1, leaseHolder: "gone-1" });
    expect(toFirst!.claimBy).toBeGreaterThan(Date.now());

    // Client 2 waits; when client 1's claim lapses the coordinator's alarm hands the task over. Gone too.
    const second = unseen("gone-2");
    await untilWaiting(queue, 1);
    await lapseClaim(id);
    expect(await runDurableObjectAlarm(coordinator(queue))).toBe(true);
    const [toSecond] = await second;
    expect(toSecond).toMatchObject({ id, attempts: 1, leaseHolder: "gone-2", errors: "[]" });

    // Two deliveries to gone clients with max_attempts 2: a live worker still gets its first real attempt.
    await lapseClaim(id);
    const live = await leaseOne(queue, { holder: "live" });
    expect(live).toMatchObject({ id, attempts: 1, claim_by: null, errors: [] });
    expect((await complete(id, live.lease_token, "done")).status).toBe(200);
    expect(await row(id)).toMatchObject({ state: "completed", attempts: 1 });
  });

  it("a worker claims a long poll's batch with one extend call; then the claim window no longer applies", async () => {
    const queue = uniqueQueue("claim");
    const waiting = lease(queue, { wait_s: 10, max: 5 });
    await untilWaiting(queue, 1);
    await call("POST", `/v1/queues/${queue}/tasks`, { body: { tasks: [{}, {}, {}] } });
    const tasks = await waiting;
    expect(tasks.length).toBeGreaterThan(0);
    const res = await call<{ results: Array<{ id: string; ok: boolean; lease_expires_at?: string }> }>(
      "POST",
      `/v1/queues/${queue}/extend`,
      { body: { leases: tasks.map((t) => ({ id: t.id, lease_token: t.lease_token })), visibility_timeout_s: 120 } },
    );
    expect(res.status).toBe(200);
    expect(res.body.results.map((r) => r.ok)).toEqual(tasks.map(() => true));
    for (const t of tasks) {
      await lapseClaim(t.id); // no effect on a claimed lease
      expect(await row(t.id)).toMatchObject({ state: "processing", claimBy: null, leaseToken: t.lease_token });
    }
    const wrong = await call<{ results: Array<{ ok: boolean; error?: { code: string } }> }>(
      "POST",
      `/v1/queues/${queue}/extend`,
      { body: { leases: [{ id: tasks[0]!.id, lease_token: "f".repeat(32) }] } },
    );
    expect(wrong.body.results[0]).toMatchObject({ ok: false, error: { code: "lease_lost" } });
  });
});

describe("redelivery without the cron tick (issue 8.2)", () => {
  it("a task whose lease expired is leased again once its backoff is due, with no tick", async () => {
    const queue = uniqueQueue("redeliver");
    const id = await enqueueOne(queue);
    const first = await leaseOne(queue, { visibility_timeout_s: 30 });
    // Expired, and its backoff (10 s after a first attempt) already passed: backdated, not slept.
    await (
      await taskDb(id)
    ).run(
      sql`UPDATE tasks SET lease_expires_at = ${Date.now() - 11_000}, started_at = ${Date.now() - 41_000} WHERE id = ${id}`,
    );
    const second = await leaseOne(queue);
    expect(second).toMatchObject({ id, attempts: 2 });
    expect(second.errors).toEqual([expect.objectContaining({ attempt: 1, kind: "lease_expired" })]);
    expectError(await complete(id, first.lease_token, "late"), 409, "lease_lost");
    expect((await complete(id, second.lease_token, "ok")).status).toBe(200);
  });

  it("not before the backoff is due", async () => {
    const queue = uniqueQueue("redeliver");
    const id = await enqueueOne(queue);
    await leaseOne(queue, { visibility_timeout_s: 30 });
    await expireLease(id);
    expect(await lease(queue)).toEqual([]);
  });
});

describe("idempotent acks (issue 8.3)", () => {
  it("repeating a complete whose answer was lost answers 200 with repeated: true; another token is still refused", async () => {
    const queue = uniqueQueue("repeat");
    const id = await enqueueOne(queue);
    const task = await leaseOne(queue);
    const first = await complete(id, task.lease_token, { n: 1 });
    expect(first.body).toMatchObject({ id, state: "completed", repeated: false });
    const again = await complete(id, task.lease_token, { n: 2 });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject<Partial<Outcome>>({ id, state: "completed", repeated: true, children: [] });
    expect(JSON.parse((await row(id)).result!)).toEqual({ n: 1 });
    expectError(await complete(id, "0".repeat(32), { n: 3 }), 409, "lease_lost");
  });

  it("repeating a fail and a release says so; a batch ack reports repeats per item", async () => {
    const queue = uniqueQueue("repeat");
    const failed = await enqueueOne(queue);
    const leased = await leaseOne(queue);
    const body = { lease_token: leased.lease_token, error: "boom", retry_after_s: 60 };
    expect((await fail(failed, body)).body).toMatchObject({ state: "pending", repeated: false });
    expect((await fail(failed, body)).body).toMatchObject({ state: "pending", repeated: true });
    expect(JSON.parse((await row(failed)).errors)).toHaveLength(1);

    const released = await enqueueOne(queue);
    const done = await enqueueOne(queue);
    const two = await lease(queue, { max: 2 });
    const token = new Map(two.map((t) => [t.id, t.lease_token]));
    const ack = {
      complete: [{ id: done, lease_token: token.get(done)!, result: 1 }],
      release: [{ id: released, lease_token: token.get(released)! }],
    };
    const firstAck = await call<AckResults>("POST", `/v1/queues/${queue}/ack`, { body: ack });
    expect(firstAck.body.results.map((r) => [r.ok, r.repeated])).toEqual([
      [true, false],
      [true, false],
    ]);
    const secondAck = await call<AckResults>("POST", `/v1/queues/${queue}/ack`, { body: ack });
    expect(secondAck.body.results.map((r) => [r.id, r.ok, r.state, r.repeated])).toEqual([
      [done, true, "completed", true],
      [released, true, "pending", true],
    ]);
  });
});
