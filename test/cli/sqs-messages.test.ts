import {
  ChangeMessageVisibilityBatchCommand,
  ChangeMessageVisibilityCommand,
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  DeleteMessageCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
} from "@aws-sdk/client-sqs";
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { getTask, uniqueQueue } from "./worker-support";
import { rejection, sqsClient } from "./sqs-support";

const sqs = sqsClient();

async function createQueue(prefix: string, attributes: Record<string, string> = {}) {
  const name = uniqueQueue(prefix);
  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: attributes }));
  return { name, url: QueueUrl! };
}

/** MD5OfMessageAttributes computed here with node:crypto, independently of the Worker's Web Crypto. */
function attributesMd5(
  attributes: Record<string, { DataType: string; StringValue?: string; BinaryValue?: Uint8Array }>,
) {
  const hash = createHash("md5");
  const withLength = (bytes: Buffer) => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(bytes.length);
    hash.update(length).update(bytes);
  };
  for (const name of Object.keys(attributes).sort()) {
    const value = attributes[name]!;
    withLength(Buffer.from(name));
    withLength(Buffer.from(value.DataType));
    const binary = value.DataType.startsWith("Binary");
    hash.update(Buffer.from([binary ? 2 : 1]));
    withLength(binary ? Buffer.from(value.BinaryValue!) : Buffer.from(value.StringValue!));
  }
  return hash.digest("hex");
}

describe("SQS messages through @aws-sdk/client-sqs", () => {
  it("sends with attributes, receives them with system attributes, deletes; every message is an edgeq task", async () => {
    const { url } = await createQueue("sqs-msg");
    const attributes = {
      "meta.color": { DataType: "String", StringValue: "blue ✓" },
      size: { DataType: "Number", StringValue: "42" },
      blob: { DataType: "Binary", BinaryValue: new Uint8Array([0, 1, 254, 255]) },
    };
    const body = 'héllo {"json": true} 🎧';
    const sent = await sqs.send(
      new SendMessageCommand({ QueueUrl: url, MessageBody: body, MessageAttributes: attributes }),
    );
    // The SDK itself verified MD5OfMessageBody; the attributes' digest is checked here.
    expect(sent.MD5OfMessageAttributes).toBe(attributesMd5(attributes));

    // The task: type sqs, payload { body, attributes } as `edgeq show` prints it.
    const task = await getTask(sent.MessageId!);
    expect(task).toMatchObject({ state: "pending", type: "sqs" });
    expect((task as unknown as { payload: unknown }).payload).toEqual({
      body,
      attributes: {
        "meta.color": { DataType: "String", StringValue: "blue ✓" },
        size: { DataType: "Number", StringValue: "42" },
        blob: { DataType: "Binary", BinaryValue: "AAH+/w==" },
      },
    });

    const before = Date.now();
    const { Messages } = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: url,
        MessageAttributeNames: ["All"],
        MessageSystemAttributeNames: ["All"],
      }),
    );
    expect(Messages).toHaveLength(1);
    const message = Messages![0]!;
    expect(message.MessageId).toBe(sent.MessageId);
    expect(message.Body).toBe(body);
    expect(message.MessageAttributes).toEqual(attributes);
    expect(message.MD5OfMessageAttributes).toBe(sent.MD5OfMessageAttributes);
    expect(message.Attributes?.ApproximateReceiveCount).toBe("1");
    expect(Number(message.Attributes?.SentTimestamp)).toBeLessThanOrEqual(before);
    expect(Number(message.Attributes?.ApproximateFirstReceiveTimestamp)).toBeGreaterThanOrEqual(
      Number(message.Attributes?.SentTimestamp),
    );
    expect((await getTask(message.MessageId!)).state).toBe("processing");

    // Only the attributes asked for: by name, or by prefix ("meta.*").
    const [again] =
      (await sqs.send(
        new ChangeMessageVisibilityCommand({
          QueueUrl: url,
          ReceiptHandle: message.ReceiptHandle,
          VisibilityTimeout: 0,
        }),
      ),
      (await sqs.send(new ReceiveMessageCommand({ QueueUrl: url, MessageAttributeNames: ["meta.*", "size"] })))
        .Messages!);
    expect(Object.keys(again!.MessageAttributes!).sort()).toEqual(["meta.color", "size"]);
    expect(again!.Attributes).toBeUndefined();

    await sqs.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: again!.ReceiptHandle }));
    expect((await getTask(message.MessageId!)).state).toBe("completed");
    // Deleting again, or with the older handle, succeeds silently (SQS does the same).
    await sqs.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: again!.ReceiptHandle }));
    await sqs.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: message.ReceiptHandle }));
    const invalid = await rejection(
      sqs.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: "not-a-handle" })),
    );
    expect([invalid.name, invalid.$metadata?.httpStatusCode]).toEqual(["ReceiptHandleIsInvalid", 404]);
  });

  it("batches: each entry succeeds or fails on its own; batch-wide mistakes are SQS's batch errors", async () => {
    const { url } = await createQueue("sqs-batch");
    const sent = await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: url,
        Entries: [
          { Id: "ok-1", MessageBody: "one" },
          { Id: "too-late", MessageBody: "two", DelaySeconds: 901 },
          { Id: "bad-chars", MessageBody: "nul \u0000 inside" },
          { Id: "ok-2", MessageBody: "three" },
        ],
      }),
    );
    expect(sent.Successful!.map((s) => s.Id)).toEqual(["ok-1", "ok-2"]);
    expect(sent.Failed!.map((f) => [f.Id, f.Code, f.SenderFault])).toEqual([
      ["too-late", "InvalidParameterValue", true],
      ["bad-chars", "InvalidMessageContents", true],
    ]);

    const { Messages } = await sqs.send(new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10 }));
    expect(Messages!.map((m) => m.Body).sort()).toEqual(["one", "three"]);
    const [first, second] = Messages!;

    const changed = await sqs.send(
      new ChangeMessageVisibilityBatchCommand({
        QueueUrl: url,
        Entries: [
          { Id: "a", ReceiptHandle: first!.ReceiptHandle, VisibilityTimeout: 120 },
          { Id: "b", ReceiptHandle: "garbage", VisibilityTimeout: 120 },
        ],
      }),
    );
    expect(changed.Successful!.map((s) => s.Id)).toEqual(["a"]);
    expect(changed.Failed!.map((f) => [f.Id, f.Code])).toEqual([["b", "ReceiptHandleIsInvalid"]]);
    const extended = await getTask(first!.MessageId!);
    expect(Date.parse(extended.lease_expires_at!) - Date.now()).toBeGreaterThan(100_000);

    const deleted = await sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: url,
        Entries: [
          { Id: "x", ReceiptHandle: first!.ReceiptHandle },
          { Id: "y", ReceiptHandle: "garbage" },
          { Id: "z", ReceiptHandle: second!.ReceiptHandle },
        ],
      }),
    );
    expect(deleted.Successful!.map((s) => s.Id)).toEqual(["x", "z"]);
    expect(deleted.Failed!.map((f) => [f.Id, f.Code])).toEqual([["y", "ReceiptHandleIsInvalid"]]);
    expect((await getTask(first!.MessageId!)).state).toBe("completed");
    expect((await getTask(second!.MessageId!)).state).toBe("completed");

    const empty = await rejection(sqs.send(new SendMessageBatchCommand({ QueueUrl: url, Entries: [] })));
    expect(empty.name).toBe("EmptyBatchRequest");
    const eleven = Array.from({ length: 11 }, (_, i) => ({ Id: `m${i}`, MessageBody: "x" }));
    const tooMany = await rejection(sqs.send(new SendMessageBatchCommand({ QueueUrl: url, Entries: eleven })));
    expect(tooMany.name).toBe("TooManyEntriesInBatchRequest");
    const twice = [
      { Id: "same", MessageBody: "x" },
      { Id: "same", MessageBody: "y" },
    ];
    const notDistinct = await rejection(sqs.send(new SendMessageBatchCommand({ QueueUrl: url, Entries: twice })));
    expect(notDistinct.name).toBe("BatchEntryIdsNotDistinct");
    const badId = await rejection(
      sqs.send(new DeleteMessageBatchCommand({ QueueUrl: url, Entries: [{ Id: "no spaces", ReceiptHandle: "x" }] })),
    );
    expect(badId.name).toBe("InvalidBatchEntryId");
  });

  it("FIFO subset: MessageGroupId is the task's key (and group), one message of a group in flight at a time; MessageDeduplicationId the dedupe key", async () => {
    const name = `${uniqueQueue("sqs-fifo")}.fifo`;
    const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: { FifoQueue: "true" } }));
    const first = await sqs.send(
      new SendMessageCommand({ QueueUrl, MessageBody: "a", MessageGroupId: "g1", MessageDeduplicationId: "d1" }),
    );
    const repeat = await sqs.send(
      new SendMessageCommand({ QueueUrl, MessageBody: "a", MessageGroupId: "g1", MessageDeduplicationId: "d1" }),
    );
    expect(repeat.MessageId).toBe(first.MessageId);
    // Content-based deduplication without an id.
    const c1 = await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: "same body", MessageGroupId: "g1" }));
    const c2 = await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: "same body", MessageGroupId: "g1" }));
    expect(c2.MessageId).toBe(c1.MessageId);
    const noGroup = await rejection(sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: "b" })));
    expect(noGroup.name).toBe("MissingParameter");

    const { Messages } = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10, MessageSystemAttributeNames: ["MessageGroupId"] }),
    );
    // Send order is kept, one message of a group at a time (the queue's flow is `ordered` per key): the
    // group's next message is handed out once the one in flight is deleted.
    expect(Messages!.map((m) => m.Body)).toEqual(["a"]);
    expect(Messages![0]!.Attributes).toEqual({ MessageGroupId: "g1" });
    expect((await getTask(first.MessageId!)) as unknown).toMatchObject({ key: "g1", group: "g1", dedupe_key: "d1" });
    const blocked = await sqs.send(new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10 }));
    expect(blocked.Messages ?? []).toEqual([]);
    await sqs.send(new DeleteMessageCommand({ QueueUrl, ReceiptHandle: Messages![0]!.ReceiptHandle! }));
    const next = await sqs.send(new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10 }));
    expect(next.Messages!.map((m) => m.Body)).toEqual(["same body"]);
  });
});
