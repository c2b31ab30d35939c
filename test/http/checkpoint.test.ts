import { describe, expect, it } from "vitest";
import { MAX_PAYLOAD_BYTES } from "../../src/contracts/limits";
import { row, snapshot, uniqueQueue } from "../helpers";
import { call, enqueueOne, expectError, fail, getTask, leaseOne } from "./api";

interface HeartbeatBody {
  id: string;
  lease_expires_at: string;
  progress: number | null;
  progress_message: string | null;
}

function heartbeat(id: string, body: Record<string, unknown>) {
  return call<HeartbeatBody>("POST", `/v1/tasks/${id}/heartbeat`, { body });
}

describe("heartbeat checkpoint", () => {
  it("stores the checkpoint, shows it on the task, keeps it when omitted and replaces it when given", async () => {
    const queue = uniqueQueue("ckpt");
    const id = await enqueueOne(queue);
    const leased = await leaseOne(queue);
    expect(leased.checkpoint).toBeNull();

    const first = await heartbeat(id, { lease_token: leased.lease_token, checkpoint: { page: 3, done: ["a", "b"] } });
    expect(first.status, first.text).toBe(200);
    expect((await getTask(id)).checkpoint).toEqual({ page: 3, done: ["a", "b"] });

    expect((await heartbeat(id, { lease_token: leased.lease_token, progress: 40 })).status).toBe(200);
    expect(await getTask(id)).toMatchObject({ progress: 40, checkpoint: { page: 3, done: ["a", "b"] } });

    expect((await heartbeat(id, { lease_token: leased.lease_token, checkpoint: "step-4" })).status).toBe(200);
    expect((await getTask(id)).checkpoint).toBe("step-4");
  });

  it("hands the checkpoint to the next attempt after a retryable failure", async () => {
    const queue = uniqueQueue("ckpt");
    const id = await enqueueOne(queue, { max_attempts: 3 });
    const first = await leaseOne(queue);
    await heartbeat(id, { lease_token: first.lease_token, checkpoint: { item: 17 } });
    const failed = await fail(id, { lease_token: first.lease_token, error: "timeout", retry_after_s: 0 });
    expect(failed.body).toMatchObject({ id, state: "pending" });
    expect(await getTask(id)).toMatchObject({ state: "pending", checkpoint: { item: 17 } });

    const second = await leaseOne(queue);
    expect(second).toMatchObject({ id, attempts: 2, checkpoint: { item: 17 } });
    expect(second.lease_token).not.toBe(first.lease_token);
  });

  it("refuses an oversized checkpoint with 413 and changes nothing", async () => {
    const queue = uniqueQueue("ckpt");
    const id = await enqueueOne(queue);
    const leased = await leaseOne(queue);
    await heartbeat(id, { lease_token: leased.lease_token, checkpoint: { page: 1 } });
    const before = await snapshot(queue);
    const res = await heartbeat(id, {
      lease_token: leased.lease_token,
      progress: 90,
      checkpoint: { blob: "x".repeat(MAX_PAYLOAD_BYTES) },
    });
    expectError(res, 413, "payload_too_large", /checkpoint/);
    expect(await snapshot(queue)).toEqual(before);
    expect(await getTask(id)).toMatchObject({ checkpoint: { page: 1 }, progress: null });
  });

  it("accepts a checkpoint right at the limit", async () => {
    const queue = uniqueQueue("ckpt");
    const id = await enqueueOne(queue);
    const leased = await leaseOne(queue);
    const exact = "x".repeat(MAX_PAYLOAD_BYTES - 2); // a JSON string: the two quotes make it exactly the limit
    const res = await heartbeat(id, { lease_token: leased.lease_token, checkpoint: exact });
    expect(res.status, res.text.slice(0, 200)).toBe(200);
    expect((await row(id)).checkpoint).toHaveLength(MAX_PAYLOAD_BYTES);
  });

  it("does not write a checkpoint sent with a stale token", async () => {
    const queue = uniqueQueue("ckpt");
    const id = await enqueueOne(queue);
    const leased = await leaseOne(queue);
    await heartbeat(id, { lease_token: leased.lease_token, checkpoint: { page: 1 } });
    expectError(await heartbeat(id, { lease_token: "stale", checkpoint: { page: 99 } }), 409, "lease_lost");
    expect((await getTask(id)).checkpoint).toEqual({ page: 1 });
  });
});
