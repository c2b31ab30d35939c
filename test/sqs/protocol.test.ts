import { describe, expect, it } from "vitest";
import { SqsError } from "../../src/sqs/errors";
import { md5Hex, md5OfMessageAttributes } from "../../src/sqs/md5";
import { messageOfTask, selectAttributes, sqsPayload } from "../../src/sqs/message";
import { decodeReceiptHandle, encodeReceiptHandle } from "../../src/sqs/receipt-handle";
import { queueFromUrl, queueUrl } from "../../src/sqs/queue-url";

function code(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(SqsError);
    return (error as SqsError).code;
  }
  throw new Error("no error");
}

describe("MD5 digests (values other SQS implementations publish for the same inputs)", () => {
  it("MD5OfMessageBody", async () => {
    expect(await md5Hex('{"message_index":1}')).toBe("4504dd781f625d681c31cda87e260702");
  });

  it("MD5OfMessageAttributes, and none for no attributes", async () => {
    expect(await md5OfMessageAttributes({ "test-key": { DataType: "String", StringValue: "test-value" } })).toBe(
      "befa18540a897f7d022bf07057754a03",
    );
    const trace = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1";
    expect(await md5OfMessageAttributes({ AWSTraceHeader: { DataType: "String", StringValue: trace } })).toBe(
      "5ae4d5d7636402d80f4eb6d213245a88",
    );
    expect(await md5OfMessageAttributes({})).toBeUndefined();
  });
});

describe("receipt handles", () => {
  const id = "01JD0000000000000000000000";
  const token = "0123456789abcdef0123456789abcdef";

  it("carry the task id and lease token, and read back", () => {
    const handle = encodeReceiptHandle(id, token);
    expect(handle).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(decodeReceiptHandle(handle)).toEqual({ id, leaseToken: token });
  });

  it("anything else is ReceiptHandleIsInvalid", () => {
    for (const bad of ["", "garbage!", btoa(`v2:${id}:${token}`), btoa(`v1:${id}:short`), 42, "x".repeat(500)]) {
      expect(code(() => decodeReceiptHandle(bad))).toBe("ReceiptHandleIsInvalid");
    }
  });
});

describe("queue URLs", () => {
  it("are built on the request's origin and read back from any host", () => {
    expect(queueUrl("http://127.0.0.1:8787", "jobs")).toBe("http://127.0.0.1:8787/sqs/000000000000/jobs");
    expect(queueFromUrl("https://elsewhere.example/sqs/000000000000/jobs")).toBe("jobs");
    expect(queueFromUrl("jobs")).toBe("jobs");
    expect(code(() => queueFromUrl("https://x.example/sqs/000000000000/bad name"))).toBe("QueueDoesNotExist");
    expect(code(() => queueFromUrl(undefined))).toBe("MissingParameter");
  });
});

describe("messages <-> tasks", () => {
  it("an SQS message is stored as { body, attributes }; a native task's payload JSON is the body", () => {
    const payload = sqsPayload("hi", { a: { DataType: "String", StringValue: "1" } });
    expect(payload).toEqual({ body: "hi", attributes: { a: { DataType: "String", StringValue: "1" } } });
    expect(messageOfTask({ type: "sqs", payload: JSON.stringify(payload) })).toEqual({
      body: "hi",
      attributes: { a: { DataType: "String", StringValue: "1" } },
    });
    expect(messageOfTask({ type: "default", payload: '{"body":"not sqs"}' })).toEqual({
      body: '{"body":"not sqs"}',
      attributes: {},
    });
  });

  it("refuses what SQS refuses", () => {
    expect(code(() => sqsPayload("", undefined))).toBe("InvalidParameterValue");
    expect(code(() => sqsPayload("bell \u0007", undefined))).toBe("InvalidMessageContents");
    expect(code(() => sqsPayload("x".repeat(256 * 1024 + 1), undefined))).toBe("InvalidParameterValue");
    expect(code(() => sqsPayload("x", { "AWS.reserved": { DataType: "String", StringValue: "1" } }))).toBe(
      "InvalidParameterValue",
    );
    expect(code(() => sqsPayload("x", { n: { DataType: "Number", StringValue: "nan-ish" } }))).toBe(
      "InvalidParameterValue",
    );
    // A body that fits SQS's 256 KiB but not edgeq's stored JSON limit once escaped.
    expect(code(() => sqsPayload('"'.repeat(200 * 1024), undefined))).toBe("InvalidParameterValue");
  });

  it("selects attributes by All, name or prefix", () => {
    const all = {
      "meta.a": { DataType: "String", StringValue: "1" },
      "meta.b": { DataType: "String", StringValue: "2" },
      other: { DataType: "String", StringValue: "3" },
    };
    expect(Object.keys(selectAttributes(all, ["All"]))).toEqual(["meta.a", "meta.b", "other"]);
    expect(Object.keys(selectAttributes(all, ["meta.*"]))).toEqual(["meta.a", "meta.b"]);
    expect(Object.keys(selectAttributes(all, ["other"]))).toEqual(["other"]);
    expect(selectAttributes(all, undefined)).toEqual({});
  });
});
