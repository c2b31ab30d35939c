import {
  ChangeMessageVisibilityCommand,
  CreateQueueCommand,
  DeleteMessageCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
} from "@aws-sdk/client-sqs";
import { describe, expect, it } from "vitest";
import { getTask, uniqueQueue } from "./worker-support";
import { rejection, sqsClient } from "./sqs-support";

const sqs = sqsClient();

async function createQueue(prefix: string, attributes: Record<string, string> = {}) {
  const { QueueUrl } = await sqs.send(
    new CreateQueueCommand({ QueueName: uniqueQueue(prefix), Attributes: attributes }),
  );
  return QueueUrl!;
}

describe("SQS delivery through @aws-sdk/client-sqs", () => {
  it("long-polls: a waiting ReceiveMessage is answered when a delayed message comes due, and what it hands out is claimed", async () => {
    const url = await createQueue("sqs-poll");
    const receiving = sqs.send(
      new ReceiveMessageCommand({ QueueUrl: url, WaitTimeSeconds: 10, VisibilityTimeout: 30 }),
    );
    // Due in a second: the receive (sent first) waits in the coordinator whichever request the server sees
    // first, and the coordinator's alarm answers it. (A receive woken by a SendMessage is
    // test/sqs/endpoint.test.ts's, where the coordinator's waiters can be counted.)
    const sentAt = Date.now();
    const sent = await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: "wake up", DelaySeconds: 1 }));
    const { Messages } = await receiving;
    const waited = Date.now() - sentAt;
    expect(waited).toBeGreaterThanOrEqual(900);
    expect(waited).toBeLessThan(5_000);
    expect(Messages!.map((m) => m.MessageId)).toEqual([sent.MessageId]);
    // Answered after it waited: the coordinator's lease was provisional (claim_by); the receive claimed
    // it, so the message stays invisible for its whole visibility timeout, as in SQS.
    const task = await getTask(sent.MessageId!);
    expect(task.state).toBe("processing");
    expect((task as unknown as { claim_by: string | null }).claim_by).toBeNull();
    expect(Date.parse(task.lease_expires_at!) - Date.now()).toBeGreaterThan(20_000);
  });

  it("an empty long poll ends after WaitTimeSeconds with no messages; the queue's ReceiveMessageWaitTimeSeconds applies", async () => {
    const url = await createQueue("sqs-wait", { ReceiveMessageWaitTimeSeconds: "1" });
    const started = Date.now();
    const { Messages } = await sqs.send(new ReceiveMessageCommand({ QueueUrl: url }));
    const waited = Date.now() - started;
    expect(Messages ?? []).toEqual([]);
    expect(waited).toBeGreaterThanOrEqual(900);
    expect(waited).toBeLessThan(5_000);
  });

  it("redelivers after the visibility timeout with ApproximateReceiveCount 2; the first handle is stale", async () => {
    const url = await createQueue("sqs-expiry");
    const sent = await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: "again" }));
    const first = (
      await sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: url,
          VisibilityTimeout: 1,
          MessageSystemAttributeNames: ["ApproximateReceiveCount"],
        }),
      )
    ).Messages![0]!;
    expect(first.Attributes).toEqual({ ApproximateReceiveCount: "1" });
    // Not deleted: it comes back once its timeout (1 s) and the queue's 1 s backoff have passed; the long
    // poll is woken by the coordinator's alarm, no polling.
    const second = (
      await sqs.send(
        new ReceiveMessageCommand({ QueueUrl: url, WaitTimeSeconds: 10, MessageSystemAttributeNames: ["All"] }),
      )
    ).Messages![0]!;
    expect(second.MessageId).toBe(sent.MessageId);
    expect(second.Attributes?.ApproximateReceiveCount).toBe("2");
    expect(second.ReceiptHandle).not.toBe(first.ReceiptHandle);
    // The stale handle: a visibility change is refused, a delete "succeeds" and deletes nothing.
    const stale = await rejection(
      sqs.send(
        new ChangeMessageVisibilityCommand({
          QueueUrl: url,
          ReceiptHandle: first.ReceiptHandle,
          VisibilityTimeout: 60,
        }),
      ),
    );
    expect(stale.name).toBe("MessageNotInflight");
    await sqs.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: first.ReceiptHandle }));
    expect((await getTask(sent.MessageId!)).state).toBe("processing");
    await sqs.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: second.ReceiptHandle }));
    expect((await getTask(sent.MessageId!)).state).toBe("completed");
  });

  it("redrives to the dead state after maxReceiveCount receives; visibility 0 keeps the receive counted", async () => {
    const url = await createQueue("sqs-dead", {
      RedrivePolicy: JSON.stringify({
        maxReceiveCount: 2,
        deadLetterTargetArn: "arn:aws:sqs:us-east-1:000000000000:dlq",
      }),
    });
    const sent = await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: "poison" }));
    for (const count of ["1", "2"]) {
      const message = (
        await sqs.send(
          new ReceiveMessageCommand({ QueueUrl: url, MessageSystemAttributeNames: ["ApproximateReceiveCount"] }),
        )
      ).Messages![0]!;
      expect(message.Attributes?.ApproximateReceiveCount).toBe(count);
      await sqs.send(
        new ChangeMessageVisibilityCommand({
          QueueUrl: url,
          ReceiptHandle: message.ReceiptHandle,
          VisibilityTimeout: 0,
        }),
      );
    }
    const task = await getTask(sent.MessageId!);
    expect([task.state, task.attempts]).toEqual(["dead", 2]);
    expect((await sqs.send(new ReceiveMessageCommand({ QueueUrl: url }))).Messages ?? []).toEqual([]);
  });
});
