import { ListQueuesCommand } from "@aws-sdk/client-sqs";
import { describe, expect, it } from "vitest";
import { SQS_DEV_ACCESS_KEY_ID } from "../../src/contracts/limits";
import { edgeqUrl } from "./worker-support";
import { rejection, sqsClient } from "./sqs-support";

describe("SQS signature verification through @aws-sdk/client-sqs", () => {
  it("accepts a configured key pair (this server's SQS_CREDENTIALS is the development pair: its token is its own)", async () => {
    const listed = await sqsClient().send(new ListQueuesCommand({}));
    expect(listed.$metadata.httpStatusCode).toBe(200);
  });

  it("refuses a wrong secret, an unknown key and a request signed more than 15 minutes ago", async () => {
    const wrongSecret = await rejection(
      sqsClient({ credentials: { accessKeyId: SQS_DEV_ACCESS_KEY_ID, secretAccessKey: "wrong" } }).send(
        new ListQueuesCommand({}),
      ),
    );
    expect([wrongSecret.name, wrongSecret.$metadata?.httpStatusCode]).toEqual(["SignatureDoesNotMatch", 403]);
    const unknownKey = await rejection(
      sqsClient({ credentials: { accessKeyId: "AKIANOSUCHKEY", secretAccessKey: "x" } }).send(
        new ListQueuesCommand({}),
      ),
    );
    expect([unknownKey.name, unknownKey.$metadata?.httpStatusCode]).toEqual(["InvalidClientTokenId", 403]);
    // The SDK signs with its clock plus systemClockOffset: 16 minutes behind is outside the window.
    const stale = await rejection(sqsClient({ systemClockOffset: -16 * 60 * 1000 }).send(new ListQueuesCommand({})));
    expect([stale.name, stale.$metadata?.httpStatusCode]).toEqual(["RequestExpired", 400]);
  });

  it("does not take the bearer token, nor an unsigned request", async () => {
    const res = await fetch(`${edgeqUrl()}/`, {
      method: "POST",
      headers: {
        "Content-Type": "application/x-amz-json-1.0",
        "X-Amz-Target": "AmazonSQS.ListQueues",
        Authorization: "Bearer cli-test-token",
      },
      body: "{}",
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { __type: string }).__type).toBe("com.amazonaws.sqs#IncompleteSignature");
    const unsigned = await fetch(`${edgeqUrl()}/sqs`, {
      method: "POST",
      headers: { "Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": "AmazonSQS.ListQueues" },
      body: "{}",
    });
    expect(unsigned.status).toBe(403);
    expect(unsigned.headers.get("x-amzn-query-error")).toBe("MissingAuthenticationToken;Sender");
  });
});
