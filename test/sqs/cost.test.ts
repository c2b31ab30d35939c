import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { uniqueQueue } from "../helpers";
import { meteredD1 } from "../support/metered-d1";
import { call, sqsRequest } from "./signed-request";

// What a message costs on D1's bill over SQS, read from D1's own meta.rows_written: the same engine calls
// as the native API, so the SQS path adds no write of its own — its queue lookup is a read. A batch of plain
// messages is one pack (src/engine/hybrid/route-enqueue.ts): its row and live-index entry at the send, its row
// at the receive, its row and finished-index entry at the delete, plus one counter row per call.
describe("D1 rows written per SQS message", () => {
  it("is 0.8 for SendMessageBatch(10) + ReceiveMessage(10) + DeleteMessageBatch(10): one pack's 5 + 3 counter rows per 10", async () => {
    // Both local shards metered: the queue is placed on one of them (the directory's writes are on DB).
    const home = meteredD1(env.DB);
    const other = meteredD1(env.DB_1);
    const meter = {
      reset: () => (home.reset(), other.reset()),
      get usage() {
        return { rowsWritten: home.usage.rowsWritten + other.usage.rowsWritten };
      },
    };
    const metered = { DB: home.db, DB_1: other.db };
    const name = uniqueQueue("sqs-cost");
    const { body: created } = await call(await sqsRequest("CreateQueue", { QueueName: name }), metered);
    const QueueUrl = created.QueueUrl;
    meter.reset();

    const entries = Array.from({ length: 10 }, (_, i) => ({ Id: `m${i}`, MessageBody: `message ${i}` }));
    const sent = await call(await sqsRequest("SendMessageBatch", { QueueUrl, Entries: entries }), metered);
    expect((sent.body.Successful as unknown[]).length).toBe(10);
    const sendWritten = meter.usage.rowsWritten;
    meter.reset();

    const { body: received } = await call(
      await sqsRequest("ReceiveMessage", { QueueUrl, MaxNumberOfMessages: 10 }),
      metered,
    );
    const messages = received.Messages as Array<{ ReceiptHandle: string }>;
    expect(messages).toHaveLength(10);
    const receiveWritten = meter.usage.rowsWritten;
    meter.reset();

    const deleted = await call(
      await sqsRequest("DeleteMessageBatch", {
        QueueUrl,
        Entries: messages.map((m, i) => ({ Id: `d${i}`, ReceiptHandle: m.ReceiptHandle })),
      }),
      metered,
    );
    expect((deleted.body.Successful as unknown[]).length).toBe(10);
    const deleteWritten = meter.usage.rowsWritten;

    expect({ send: sendWritten, receive: receiveWritten, delete: deleteWritten }).toEqual({
      send: 2 + 1,
      receive: 1 + 1,
      delete: 2 + 1,
    });
    expect((sendWritten + receiveWritten + deleteWritten) / 10).toBe(0.8);
  });
});
