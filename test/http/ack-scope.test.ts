import { describe, expect, it } from "vitest";
import { snapshot, uniqueQueue } from "../helpers";
import { call, enqueueOne, getTask, leaseOne, type AckResults } from "./api";

function ack(queue: string, body: Record<string, unknown>) {
  return call<AckResults>("POST", `/v1/queues/${queue}/ack`, { body });
}

describe("the ack route is scoped to its URL's queue", () => {
  it("answers not_found for a task of another queue and leaves it unchanged", async () => {
    const a = uniqueQueue("scope-a");
    const b = uniqueQueue("scope-b");
    await enqueueOne(a);
    const id = await enqueueOne(b, { then: [{ type: "next" }] });
    const leased = await leaseOne(b);
    expect(leased.id).toBe(id);
    const beforeA = await snapshot(a);
    const beforeB = await snapshot(b);

    for (const body of [
      { complete: [{ id, lease_token: leased.lease_token, result: "sneaky" }] },
      { fail: [{ id, lease_token: leased.lease_token, error: "sneaky", retryable: false }] },
    ]) {
      const res = await ack(a, body);
      expect(res.status).toBe(200);
      expect(res.body.results).toEqual([
        { id, ok: false, error: { code: "not_found", message: expect.stringMatching(new RegExp(`${id}.*${a}`)) } },
      ]);
    }
    expect(await snapshot(b)).toEqual(beforeB);
    expect(await snapshot(a)).toEqual(beforeA);

    // The token is still good through the task's own queue.
    const own = await ack(b, { complete: [{ id, lease_token: leased.lease_token, result: "ok" }] });
    expect(own.body.results).toEqual([
      { id, ok: true, state: "completed", children: [expect.any(String)], repeated: false },
    ]);
    expect(await getTask(id)).toMatchObject({ state: "completed", result: "ok" });
  });

  it("applies the URL queue's items of a mixed ack and refuses only the other queue's", async () => {
    const a = uniqueQueue("scope-a");
    const b = uniqueQueue("scope-b");
    const mine = await enqueueOne(a);
    const theirs = await enqueueOne(b);
    const la = await leaseOne(a);
    const lb = await leaseOne(b);
    const res = await ack(a, {
      complete: [
        { id: mine, lease_token: la.lease_token, result: 1 },
        { id: theirs, lease_token: lb.lease_token, result: 2 },
      ],
    });
    expect(res.body.results).toEqual([
      { id: mine, ok: true, state: "completed", children: [], repeated: false },
      { id: theirs, ok: false, error: expect.objectContaining({ code: "not_found" }) },
    ]);
    expect(await getTask(mine)).toMatchObject({ state: "completed", result: 1 });
    expect(await getTask(theirs)).toMatchObject({ state: "processing", result: null });
  });

  it("still answers lease_lost, not not_found, for a stale token of the URL's own queue", async () => {
    const a = uniqueQueue("scope-a");
    const id = await enqueueOne(a);
    await leaseOne(a);
    const res = await ack(a, { complete: [{ id, lease_token: "stale" }] });
    expect(res.body.results).toEqual([{ id, ok: false, error: expect.objectContaining({ code: "lease_lost" }) }]);
  });
});
