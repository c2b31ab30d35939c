import { describe, expect, it } from "vitest";
import { request } from "../http/api";
import { uniqueQueue } from "../helpers";
import { call, sqsRequest } from "../sqs/signed-request";
import { countingEnv, type ObjectCall } from "../support/counting-env";

/**
 * One owner for what follows a state change (src/effects/follow.ts): the same change made through the HTTP
 * API and through the SQS endpoint wakes the same coordinators and publishes the same events, because
 * both entry points make the same operation call (src/operations/) and neither places a wake-up itself.
 */

/** A recorded call with its task ids replaced by their position, so two queues' calls compare. */
function shape(calls: ObjectCall[], ids: string[]) {
  // Reports to the waits for tasks follow this isolate's earlier answers, not the entry point (entry-points.ts).
  return calls
    .filter((c) => c.call !== "COORDINATOR.tasksFinished")
    .map((c) => ({
      call: c.call,
      ...(c.events ? { events: c.events.map((e) => ({ kind: e.kind, ids: e.ids.map((id) => ids.indexOf(id)) })) } : {}),
    }));
}

/** Runs `request` through the Worker with a recording env, answering the calls it made and its body. */
async function recorded(req: Request) {
  const counted = countingEnv();
  const res = await call(req, counted.env as unknown as Record<string, unknown>);
  expect(res.status, JSON.stringify(res.body)).toBeLessThan(300);
  return { calls: counted.calls, body: res.body };
}

const http = (method: string, path: string, body: unknown) => request(method, path, { body });

describe("the same state change through HTTP and SQS", () => {
  it("wakes and publishes the same: enqueue, lease, fail (visible again), lease, complete", async () => {
    const native = uniqueQueue("same-http");
    const sqsName = uniqueQueue("same-sqs");
    const created = await call(await sqsRequest("CreateQueue", { QueueName: sqsName }));
    const QueueUrl = created.body.QueueUrl as string;

    // Enqueue one task: its partition's coordinator is woken, its "enqueued" event published.
    const a1 = await recorded(http("POST", `/v1/queues/${native}/tasks`, { payload: { n: 1 } }));
    const b1 = await recorded(await sqsRequest("SendMessage", { QueueUrl, MessageBody: "1" }));
    const httpId = (a1.body.tasks as Array<{ id: string }>)[0]!.id;
    const sqsId = b1.body.MessageId as string;
    expect(shape(a1.calls, [httpId])).toEqual([
      { call: "COORDINATOR.notify" },
      { call: "EVENT_HUB.publish", events: [{ kind: "enqueued", ids: [0] }] },
    ]);
    expect(shape(b1.calls, [sqsId])).toEqual(shape(a1.calls, [httpId]));

    // Lease it (no wait): "leased" is published, nobody is woken.
    const a2 = await recorded(http("POST", `/v1/queues/${native}/lease`, { max: 1 }));
    const b2 = await recorded(await sqsRequest("ReceiveMessage", { QueueUrl, WaitTimeSeconds: 0 }));
    const httpToken = (a2.body.tasks as Array<{ lease_token: string }>)[0]!.lease_token;
    const handle = (b2.body.Messages as Array<{ ReceiptHandle: string }>)[0]!.ReceiptHandle;
    expect(shape(a2.calls, [httpId])).toEqual([{ call: "EVENT_HUB.publish", events: [{ kind: "leased", ids: [0] }] }]);
    expect(shape(b2.calls, [sqsId])).toEqual(shape(a2.calls, [httpId]));

    // End the attempt, due again at once (SQS: visibility 0): the coordinator is woken, "failed" published.
    const a3 = await recorded(
      http("POST", `/v1/queues/${native}/ack`, {
        fail: [{ id: httpId, lease_token: httpToken, error: "again", retry_after_s: 0 }],
      }),
    );
    const b3 = await recorded(
      await sqsRequest("ChangeMessageVisibility", { QueueUrl, ReceiptHandle: handle, VisibilityTimeout: 0 }),
    );
    expect(shape(a3.calls, [httpId])).toEqual([
      { call: "COORDINATOR.notify" },
      { call: "EVENT_HUB.publish", events: [{ kind: "failed", ids: [0] }] },
    ]);
    expect(shape(b3.calls, [sqsId])).toEqual(shape(a3.calls, [httpId]));

    // Lease again and complete (SQS: delete): "completed" published, nobody woken.
    const a4 = await recorded(http("POST", `/v1/queues/${native}/lease`, { max: 1 }));
    const b4 = await recorded(await sqsRequest("ReceiveMessage", { QueueUrl, WaitTimeSeconds: 0 }));
    expect(shape(b4.calls, [sqsId])).toEqual(shape(a4.calls, [httpId]));
    const again = (a4.body.tasks as Array<{ lease_token: string }>)[0]!.lease_token;
    const handleAgain = (b4.body.Messages as Array<{ ReceiptHandle: string }>)[0]!.ReceiptHandle;
    const a5 = await recorded(
      http("POST", `/v1/queues/${native}/ack`, { complete: [{ id: httpId, lease_token: again }] }),
    );
    const b5 = await recorded(await sqsRequest("DeleteMessage", { QueueUrl, ReceiptHandle: handleAgain }));
    expect(shape(a5.calls, [httpId])).toEqual([
      { call: "EVENT_HUB.publish", events: [{ kind: "completed", ids: [0] }] },
    ]);
    expect(shape(b5.calls, [sqsId])).toEqual(shape(a5.calls, [httpId]));
  });
});
