import { describe, expect, it } from "vitest";
import { DEV_TOKEN } from "../../src/contracts/limits";
import { row, uniqueQueue } from "../helpers";
import { untilWaiting } from "../support/coordinator";
import { call, ORIGIN, sqsRequest } from "./signed-request";

describe("SQS endpoint: deployment settings", () => {
  it("refuses to serve in production without SQS_CREDENTIALS (503), even to the development pair", async () => {
    const res = await call(await sqsRequest("ListQueues", {}), {
      ENVIRONMENT: "production",
      SQS_CREDENTIALS: undefined,
    });
    expect(res.status).toBe(503);
    expect(res.body.__type).toBe("com.amazonaws.sqs#ServiceUnavailable");
    expect(res.headers.get("x-amzn-query-error")).toBe("ServiceUnavailable;Receiver");
  });

  it("with SQS_CREDENTIALS, accepts each listed pair and no longer the development pair", async () => {
    const configured = { ENVIRONMENT: "production", SQS_CREDENTIALS: "AKIDONE:secret-one, AKIDTWO:secret-two" };
    for (const key of [
      { id: "AKIDONE", secret: "secret-one" },
      { id: "AKIDTWO", secret: "secret-two" },
    ]) {
      expect((await call(await sqsRequest("ListQueues", {}, key), configured)).status).toBe(200);
    }
    const dev = await call(await sqsRequest("ListQueues", {}), configured);
    expect([dev.status, dev.body.__type]).toEqual([403, "com.amazonaws.sqs#InvalidClientTokenId"]);
  });

  it("accepts the development pair exactly where the bearer API accepts the development token", async () => {
    const unset = { SQS_CREDENTIALS: undefined };
    // `npm start` with no EDGEQ_TOKEN of one's own: it runs with DEV_TOKEN (passed or defaulted).
    for (const token of [DEV_TOKEN, undefined, `mine,${DEV_TOKEN}`]) {
      const res = await call(await sqsRequest("ListQueues", {}), {
        ...unset,
        ENVIRONMENT: "development",
        EDGEQ_TOKEN: token,
      });
      expect(res.status, String(token)).toBe(200);
    }
    // A token of one's own: the bearer API refuses DEV_TOKEN, and the SQS endpoint the published pair.
    for (const environment of ["development", "test"]) {
      const custom = { ...unset, ENVIRONMENT: environment, EDGEQ_TOKEN: "a-token-of-my-own" };
      const sqs = await call(await sqsRequest("ListQueues", {}), custom);
      expect([sqs.status, sqs.body.__type]).toEqual([503, "com.amazonaws.sqs#ServiceUnavailable"]);
      expect(sqs.body.message).toMatch(/SQS_CREDENTIALS is not set, and EDGEQ_TOKEN is a token of your own/);
      const bearer = await call(
        new Request(`${ORIGIN}/v1/queues`, { headers: { Authorization: `Bearer ${DEV_TOKEN}` } }),
        custom,
      );
      expect(bearer.status).toBe(401);
    }
  });

  it("builds ARNs in the region the caller signed for, and queue URLs on the request's host", async () => {
    const name = uniqueQueue("sqs-arn");
    const created = await call(await sqsRequest("CreateQueue", { QueueName: name }));
    expect(created.body.QueueUrl).toBe(`${ORIGIN}/sqs/000000000000/${name}`);
    const attrs = await call(
      await sqsRequest("GetQueueAttributes", { QueueUrl: created.body.QueueUrl, AttributeNames: ["QueueArn"] }),
    );
    expect(attrs.body).toEqual({ Attributes: { QueueArn: `arn:aws:sqs:eu-west-1:000000000000:${name}` } });
  });
});

describe("SQS endpoint: receives are engine leases", () => {
  it("ChangeMessageVisibility 0 makes the message visible at once and keeps its receive counted (no refund)", async () => {
    const name = uniqueQueue("sqs-vis0");
    const { body: created } = await call(await sqsRequest("CreateQueue", { QueueName: name }));
    const url = created.QueueUrl;
    const { body: sent } = await call(await sqsRequest("SendMessage", { QueueUrl: url, MessageBody: "m" }));
    const { body: received } = await call(await sqsRequest("ReceiveMessage", { QueueUrl: url }));
    const [message] = received.Messages as Array<{ ReceiptHandle: string }>;
    const changed = await call(
      await sqsRequest("ChangeMessageVisibility", {
        QueueUrl: url,
        ReceiptHandle: message!.ReceiptHandle,
        VisibilityTimeout: 0,
      }),
    );
    expect(changed.status).toBe(200);
    const task = await row(sent.MessageId as string);
    expect([task.state, task.attempts, task.leaseToken]).toEqual(["pending", 1, null]);
    expect(task.runAt).toBeLessThanOrEqual(Date.now());
    const { body: again } = await call(
      await sqsRequest("ReceiveMessage", { QueueUrl: url, AttributeNames: ["ApproximateReceiveCount"] }),
    );
    expect((again.Messages as Array<{ Attributes: unknown }>)[0]!.Attributes).toEqual({ ApproximateReceiveCount: "2" });
  });

  it("a ReceiveMessage waiting in the coordinator is answered by a SendMessage, and claims what it hands out", async () => {
    const name = uniqueQueue("sqs-poll");
    const { body: created } = await call(await sqsRequest("CreateQueue", { QueueName: name }));
    const url = created.QueueUrl;
    const receiving = call(
      await sqsRequest("ReceiveMessage", { QueueUrl: url, WaitTimeSeconds: 5, VisibilityTimeout: 30 }),
    );
    await untilWaiting(name, 1);
    const { body: sent } = await call(await sqsRequest("SendMessage", { QueueUrl: url, MessageBody: "wake up" }));
    const { body: received } = await receiving;
    expect((received.Messages as Array<{ MessageId: string }>).map((m) => m.MessageId)).toEqual([sent.MessageId]);
    // It waited, so the coordinator's lease was provisional (claim_by); the receive claimed it before
    // answering: invisible for its whole visibility timeout, as in SQS.
    const task = await row(sent.MessageId as string);
    expect([task.state, task.claimBy]).toEqual(["processing", null]);
    expect(task.leaseExpiresAt! - Date.now()).toBeGreaterThan(20_000);
  });

  it("an unknown operation and a malformed body are SQS errors, and change nothing", async () => {
    const unknown = await call(await sqsRequest("AddPermission", { QueueUrl: "x" }));
    expect([unknown.status, unknown.body.__type]).toEqual([400, "com.amazonaws.sqs#InvalidAction"]);
    const request = await sqsRequest("SendMessage", { QueueUrl: "q", MessageBody: 5 });
    const badType = await call(request);
    expect([badType.status, badType.body.__type]).toEqual([400, "com.amazonaws.sqs#InvalidParameterValue"]);
    expect(String(badType.body.message)).toMatch(/MessageBody/);
  });
});
