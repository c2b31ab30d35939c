import { describe, expect, it } from "vitest";
import { md5Hex } from "../../src/sqs/md5";
import { row, uniqueQueue } from "../helpers";
import { callText, ORIGIN, sqsQueryRequest } from "./signed-request";

/** The text of every `<name>` element, in document order. */
function all(xml: string, name: string): string[] {
  return [...xml.matchAll(new RegExp(`<${name}>([\\s\\S]*?)</${name}>`, "g"))].map((m) => m[1]!);
}

describe("SQS query protocol (form-encoded Action=…, XML answers): the same operations", () => {
  it("creates a queue, sends to its URL with attributes, receives them, deletes in a batch with one bad entry", async () => {
    const name = uniqueQueue("sqs-query");
    const created = await callText(
      await sqsQueryRequest({
        Action: "CreateQueue",
        QueueName: name,
        "Attribute.1.Name": "VisibilityTimeout",
        "Attribute.1.Value": "40",
      }),
    );
    expect(created.status).toBe(200);
    expect(created.text).toContain('<CreateQueueResponse xmlns="http://queue.amazonaws.com/doc/2012-11-05/">');
    const url = `${ORIGIN}/sqs/000000000000/${name}`;
    expect(all(created.text, "QueueUrl")).toEqual([url]);

    // Posted to the queue URL, without QueueUrl in the body, as older SDKs do.
    const sent = await callText(
      await sqsQueryRequest(
        {
          Action: "SendMessage",
          MessageBody: "<hello & bye>",
          "MessageAttribute.1.Name": "color",
          "MessageAttribute.1.Value.DataType": "String",
          "MessageAttribute.1.Value.StringValue": "blue",
        },
        `/sqs/000000000000/${name}`,
      ),
    );
    expect(sent.status).toBe(200);
    const [id] = all(sent.text, "MessageId");
    expect(all(sent.text, "MD5OfMessageBody")).toEqual([await md5Hex("<hello & bye>")]);
    expect(all(sent.text, "MD5OfMessageAttributes")).toHaveLength(1);
    expect((await row(id!)).queue).toBe(name);

    const received = await callText(
      await sqsQueryRequest({
        Action: "ReceiveMessage",
        QueueUrl: url,
        "AttributeName.1": "ApproximateReceiveCount",
        "MessageAttributeName.1": "All",
      }),
    );
    expect(all(received.text, "Body")).toEqual(["&lt;hello &amp; bye&gt;"]);
    expect(received.text).toContain("<Attribute><Name>ApproximateReceiveCount</Name><Value>1</Value></Attribute>");
    expect(received.text).toContain(
      "<MessageAttribute><Name>color</Name><Value><DataType>String</DataType><StringValue>blue</StringValue></Value></MessageAttribute>",
    );
    const [handle] = all(received.text, "ReceiptHandle");

    const deleted = await callText(
      await sqsQueryRequest({
        Action: "DeleteMessageBatch",
        QueueUrl: url,
        "DeleteMessageBatchRequestEntry.1.Id": "good",
        "DeleteMessageBatchRequestEntry.1.ReceiptHandle": handle!,
        "DeleteMessageBatchRequestEntry.2.Id": "bad",
        "DeleteMessageBatchRequestEntry.2.ReceiptHandle": "garbage",
      }),
    );
    expect(all(deleted.text, "DeleteMessageBatchResultEntry")).toEqual(["<Id>good</Id>"]);
    expect(all(all(deleted.text, "BatchResultErrorEntry")[0]!, "Code")).toEqual(["ReceiptHandleIsInvalid"]);
    expect((await row(id!)).state).toBe("completed");
  });

  it("answers errors as an XML ErrorResponse with SQS's legacy code", async () => {
    const missing = await callText(await sqsQueryRequest({ Action: "GetQueueUrl", QueueName: uniqueQueue("nope") }));
    expect(missing.status).toBe(400);
    expect(all(missing.text, "Code")).toEqual(["AWS.SimpleQueueService.NonExistentQueue"]);
    expect(all(missing.text, "Type")).toEqual(["Sender"]);
    const unknown = await callText(await sqsQueryRequest({ Action: "AddPermission" }));
    expect(all(unknown.text, "Code")).toEqual(["InvalidAction"]);
  });
});
