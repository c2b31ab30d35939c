import {
  CreateQueueCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  ListQueuesCommand,
  ListQueueTagsCommand,
  PurgeQueueCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  SetQueueAttributesCommand,
  TagQueueCommand,
  UntagQueueCommand,
} from "@aws-sdk/client-sqs";
import { describe, expect, it } from "vitest";
import { api, edgeqUrl, enqueue, uniqueQueue } from "./worker-support";
import { rejection, sqsClient } from "./sqs-support";

const sqs = sqsClient();

describe("SQS queues through @aws-sdk/client-sqs", () => {
  it("creates, finds, lists, configures and deletes a queue; its attributes are the edgeq queue config", async () => {
    const name = uniqueQueue("sqs-q");
    const created = await sqs.send(
      new CreateQueueCommand({
        QueueName: name,
        Attributes: {
          VisibilityTimeout: "45",
          MessageRetentionPeriod: "86400",
          DelaySeconds: "2",
          ReceiveMessageWaitTimeSeconds: "3",
          RedrivePolicy: JSON.stringify({ maxReceiveCount: 4, deadLetterTargetArn: "arn:aws:sqs:us-east-1:1:dlq" }),
        },
      }),
    );
    expect(created.QueueUrl).toBe(`${edgeqUrl()}/sqs/000000000000/${name}`);
    const url = created.QueueUrl!;
    expect((await sqs.send(new GetQueueUrlCommand({ QueueName: name }))).QueueUrl).toBe(url);
    // The same attributes again: its URL; different ones: QueueNameExists, as SQS.
    expect(
      (await sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: { VisibilityTimeout: "45" } }))).QueueUrl,
    ).toBe(url);
    const exists = await rejection(
      sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: { VisibilityTimeout: "46" } })),
    );
    expect(exists.name).toBe("QueueNameExists");

    const listed = await sqs.send(new ListQueuesCommand({ QueueNamePrefix: name }));
    expect(listed.QueueUrls).toEqual([url]);

    const { Attributes } = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ["All"] }));
    expect(Attributes).toMatchObject({
      QueueArn: `arn:aws:sqs:us-east-1:000000000000:${name}`,
      VisibilityTimeout: "45",
      MessageRetentionPeriod: "86400",
      DelaySeconds: "2",
      ReceiveMessageWaitTimeSeconds: "3",
      MaximumMessageSize: "262144",
      ApproximateNumberOfMessages: "0",
    });
    expect(JSON.parse(Attributes!.RedrivePolicy!)).toEqual({
      deadLetterTargetArn: `arn:aws:sqs:us-east-1:000000000000:${name}`,
      maxReceiveCount: 4,
    });
    // The same settings, seen natively.
    const config = await api<Record<string, unknown>>("GET", `/v1/queues/${name}/config`);
    expect(config).toMatchObject({ visibility_timeout_s: 45, retention_s: 86400, max_attempts: 4 });

    await sqs.send(
      new SetQueueAttributesCommand({ QueueUrl: url, Attributes: { VisibilityTimeout: "90", DelaySeconds: "0" } }),
    );
    const after = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ["VisibilityTimeout", "DelaySeconds"] }),
    );
    expect(after.Attributes).toEqual({ VisibilityTimeout: "90", DelaySeconds: "0" });
    const unknown = await rejection(
      sqs.send(new SetQueueAttributesCommand({ QueueUrl: url, Attributes: { KmsMasterKeyId: "alias/x" } })),
    );
    expect(unknown.name).toBe("InvalidAttributeName");
    const outOfRange = await rejection(
      sqs.send(new SetQueueAttributesCommand({ QueueUrl: url, Attributes: { DelaySeconds: "901" } })),
    );
    expect(outOfRange.name).toBe("InvalidAttributeValue");

    await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: "left behind" }));
    await sqs.send(new DeleteQueueCommand({ QueueUrl: url }));
    const gone = await rejection(sqs.send(new GetQueueUrlCommand({ QueueName: name })));
    expect(gone.name).toBe("QueueDoesNotExist");
    const sendGone = await rejection(sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: "x" })));
    expect([sendGone.name, sendGone.$metadata?.httpStatusCode]).toEqual(["QueueDoesNotExist", 400]);
    const stats = await api<{ counts: Record<string, number> }>("GET", `/v1/queues/${name}/stats`);
    expect(stats.counts.pending).toBe(0);
  });

  it("serves a queue used only natively: it exists by name, and its tasks' payload JSON is the body", async () => {
    const name = uniqueQueue("sqs-native");
    const [id] = await enqueue(name, [{ payload: { text: "hi", n: 1 } }]);
    const { QueueUrl } = await sqs.send(new GetQueueUrlCommand({ QueueName: name }));
    const { Messages } = await sqs.send(new ReceiveMessageCommand({ QueueUrl, MessageAttributeNames: ["All"] }));
    expect(Messages).toHaveLength(1);
    expect(Messages![0]!.MessageId).toBe(id);
    expect(JSON.parse(Messages![0]!.Body!)).toEqual({ text: "hi", n: 1 });
    expect(Messages![0]!.MessageAttributes).toBeUndefined();
  });

  it("tags a queue: CreateQueue's tags, TagQueue, UntagQueue, ListQueueTags", async () => {
    const name = uniqueQueue("sqs-tags");
    const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: name, tags: { owner: "ops" } }));
    await sqs.send(new TagQueueCommand({ QueueUrl, Tags: { team: "growth", env: "prod" } }));
    await sqs.send(new UntagQueueCommand({ QueueUrl, TagKeys: ["env"] }));
    expect((await sqs.send(new ListQueueTagsCommand({ QueueUrl }))).Tags).toEqual({ owner: "ops", team: "growth" });
    const reserved = await rejection(sqs.send(new TagQueueCommand({ QueueUrl, Tags: { "aws:x": "y" } })));
    expect([reserved.name, reserved.$metadata?.httpStatusCode]).toEqual(["InvalidParameterValue", 400]);
    await sqs.send(new UntagQueueCommand({ QueueUrl, TagKeys: ["owner", "team"] }));
    expect((await sqs.send(new ListQueueTagsCommand({ QueueUrl }))).Tags).toBeUndefined();
  });

  it("purges: live messages are cancelled, inspectable natively", async () => {
    const name = uniqueQueue("sqs-purge");
    const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: name }));
    await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl,
        Entries: ["a", "b", "c"].map((b, i) => ({ Id: `m${i}`, MessageBody: b })),
      }),
    );
    await sqs.send(new PurgeQueueCommand({ QueueUrl }));
    expect((await sqs.send(new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10 }))).Messages ?? []).toEqual(
      [],
    );
    const stats = await api<{ counts: Record<string, number> }>("GET", `/v1/queues/${name}/stats`);
    expect(stats.counts.cancelled).toBe(3);
  });

  it("answers an unknown queue and bad parameters with SQS's error codes", async () => {
    const missing = await rejection(sqs.send(new GetQueueUrlCommand({ QueueName: uniqueQueue("nope") })));
    expect([missing.name, missing.$metadata?.httpStatusCode]).toEqual(["QueueDoesNotExist", 400]);
    const badName = await rejection(sqs.send(new CreateQueueCommand({ QueueName: "no spaces allowed" })));
    expect(badName.name).toBe("InvalidParameterValue");
    const fifoName = await rejection(sqs.send(new CreateQueueCommand({ QueueName: `${uniqueQueue("f")}.fifo` })));
    expect([fifoName.name, fifoName.message]).toEqual([
      "InvalidParameterValue",
      "Value for parameter FifoQueue is invalid. Reason: a queue whose name ends in .fifo must be created with FifoQueue=true",
    ]);
    const name = uniqueQueue("sqs-bad");
    const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: name }));
    const tooMany = await rejection(sqs.send(new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 11 })));
    expect(tooMany.name).toBe("InvalidParameterValue");
    expect(tooMany.message).toMatch(/MaxNumberOfMessages/);
  });
});
