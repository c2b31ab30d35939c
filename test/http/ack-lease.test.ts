import { describe, expect, it } from "vitest";
import { snapshot, uniqueQueue } from "../helpers";
import { untilWaiting } from "../support/coordinator";
import { call, enqueue, expectError, getTask, ISO, lease, type AckResults } from "./api";

const ack = (queue: string, body: Record<string, unknown>) =>
  call<AckResults>("POST", `/v1/queues/${queue}/ack`, { body });

describe("an ack with the next lease in the same request", () => {
  it("applies the acks first, then leases the next tasks with tokens that work", async () => {
    const queue = uniqueQueue("acklease");
    await enqueue(queue, { tasks: [{ priority: 3 }, { priority: 2 }, { priority: 1 }, { priority: 0 }] });
    const [first, second] = await lease(queue, { max: 2 });
    const res = await ack(queue, {
      complete: [{ id: first!.id, lease_token: first!.lease_token, result: { n: 1 } }],
      fail: [{ id: second!.id, lease_token: second!.lease_token, error: "again", retry_after_s: 0 }],
      lease: { max: 10, holder: "w2", visibility_timeout_s: 60 },
    });
    expect(res.status).toBe(200);
    expect(res.body.results).toEqual([
      { id: first!.id, ok: true, state: "completed", children: [], repeated: false },
      { id: second!.id, ok: true, state: "pending", children: [], repeated: false },
    ]);
    // The failed task is due again at once, so the lease that follows takes it (its second attempt) along
    // with the two never leased; the completed one is never handed out again.
    const next = res.body.tasks!;
    expect(next.map((t) => t.id)).not.toContain(first!.id);
    expect(next).toHaveLength(3);
    const retried = next.find((t) => t.id === second!.id)!;
    expect(retried).toMatchObject({ state: "processing", attempts: 2, lease_holder: "w2" });
    expect(retried.errors.map((e) => e.message)).toEqual(["again"]);
    for (const t of next) {
      expect(t.lease_token).toMatch(/^[0-9a-f]{32}(?:[0-9A-Z]{2})?$/);
      expect(t.lease_expires_at).toMatch(ISO);
    }
    // Priority order, as a lease answers.
    expect(next.map((t) => t.priority)).toEqual([2, 1, 0]);
    const done = await ack(queue, { complete: next.map((t) => ({ id: t.id, lease_token: t.lease_token })) });
    expect(done.body.results.every((r) => r.ok)).toBe(true);
    expect(done.body.tasks).toBeUndefined();
    expect((await getTask(first!.id)).result).toEqual({ n: 1 });
  });

  it("answers an empty list when nothing is due, and the acks still count", async () => {
    const queue = uniqueQueue("acklease-empty");
    await enqueue(queue, { tasks: [{}] });
    const [only] = await lease(queue, { max: 1 });
    const res = await ack(queue, { complete: [{ id: only!.id, lease_token: only!.lease_token }], lease: { max: 5 } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      results: [{ id: only!.id, ok: true, state: "completed", children: [], repeated: false }],
      tasks: [],
    });
  });

  it("refuses a bad lease with 400 naming the field, and applies none of the acks", async () => {
    const queue = uniqueQueue("acklease-bad");
    await enqueue(queue, { tasks: [{}, {}] });
    const [held] = await lease(queue, { max: 1 });
    const before = await snapshot(queue);
    for (const bad of [{ max: 0 }, { max: 101 }, { wait_s: -1 }, { max: 1, surprise: true }]) {
      const res = await ack(queue, { complete: [{ id: held!.id, lease_token: held!.lease_token }], lease: bad });
      expectError(res, 400, "invalid_request", /lease/);
    }
    expect(await snapshot(queue)).toEqual(before);
    expect((await getTask(held!.id)).state).toBe("processing");
  });

  it("with wait_s, waits for a task in the queue's coordinator like a long poll", async () => {
    const queue = uniqueQueue("acklease-wait");
    await enqueue(queue, { tasks: [{}] });
    const [only] = await lease(queue, { max: 1 });
    const pending = ack(queue, {
      complete: [{ id: only!.id, lease_token: only!.lease_token }],
      lease: { max: 1, wait_s: 5 },
    });
    // A task enqueued once the ack's lease waits in the coordinator is handed to it.
    await untilWaiting(queue, 1);
    const [late] = await enqueue(queue, { tasks: [{ type: "late" }] });
    const res = await pending;
    expect(res.status).toBe(200);
    expect(res.body.results[0]).toMatchObject({ ok: true, state: "completed" });
    expect(res.body.tasks!.map((t) => t.id)).toEqual([late!.id]);
  });

  it("a worker burning down a queue of pack tasks with completions carrying the next lease takes each task once", async () => {
    // A call of plain tasks is kept in packs, and an ack of completions only carrying a lease that does not
    // wait is one store call (src/operations/ack.ts `completeThenLeaseTexts`): what a worker sees is the same.
    const queue = uniqueQueue("acklease-packs");
    const made = await enqueue(queue, { tasks: Array.from({ length: 25 }, (_, i) => ({ payload: { i } })) });
    let held = await lease(queue, { max: 10 });
    const seen: string[] = [];
    while (held.length > 0) {
      seen.push(...held.map((t) => t.id));
      const res = await ack(queue, {
        complete: held.map((t) => ({ id: t.id, lease_token: t.lease_token, result: { done: t.id } })),
        lease: { max: 10, holder: "carrier" },
      });
      expect(res.status).toBe(200);
      expect(res.body.results).toEqual(
        held.map((t) => ({ id: t.id, ok: true, state: "completed", children: [], repeated: false })),
      );
      for (const t of res.body.tasks!) expect(t).toMatchObject({ state: "processing", lease_holder: "carrier" });
      held = res.body.tasks!;
    }
    expect([...seen].sort()).toEqual(made.map((t) => t.id).sort());
    const last = await getTask(seen.at(-1)!);
    expect(last).toMatchObject({ state: "completed", result: { done: last.id } });
  });
});
