import { describe, expect, it } from "vitest";
import { SqsError } from "../../src/sqs/errors";
import { canonicalRequest, signRequest, verifySigV4, type SignedRequest } from "../../src/sqs/sigv4";

// The AWS Signature Version 4 test suite (aws-sig-v4-test-suite): its credentials, time and scope.
const SUITE = {
  accessKeyId: "AKIDEXAMPLE",
  secret: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
  amzDate: "20150830T123600Z",
  scope: { scopeDate: "20150830", region: "us-east-1", service: "service", signedHeaders: ["host", "x-amz-date"] },
};

function suiteRequest(method: string, query = "", path = "/"): SignedRequest {
  return {
    method,
    path,
    query,
    headers: new Headers({ Host: "example.amazonaws.com", "X-Amz-Date": SUITE.amzDate }),
    body: new Uint8Array(),
  };
}

describe("SigV4: the AWS test suite's vectors", () => {
  it("get-vanilla: canonical request and signature", async () => {
    expect(await canonicalRequest(suiteRequest("GET"), SUITE.scope.signedHeaders)).toBe(
      [
        "GET",
        "/",
        "",
        "host:example.amazonaws.com",
        "x-amz-date:20150830T123600Z",
        "",
        "host;x-amz-date",
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
      ].join("\n"),
    );
    expect(await signRequest(suiteRequest("GET"), SUITE.scope, SUITE.amzDate, SUITE.secret)).toBe(
      "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
    );
  });

  it.each([
    ["post-vanilla", "POST", "", "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b"],
    ["post-vanilla-query", "POST", "Param1=value1", "28038455d6de14eafc1f9222cf5aa6f1a96197d7deb8263271d420d138af7f11"],
    [
      "get-vanilla-query-order-key-case",
      "GET",
      "Param2=value2&Param1=value1",
      "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500",
    ],
  ])("%s", async (_name, method, query, signature) => {
    expect(await signRequest(suiteRequest(method, query), SUITE.scope, SUITE.amzDate, SUITE.secret)).toBe(signature);
  });
});

describe("SigV4 verification", () => {
  const T = Date.parse("2015-08-30T12:36:00Z");
  const secrets = new Map([[SUITE.accessKeyId, SUITE.secret]]);
  const secretFor = (id: string) => secrets.get(id);
  const body = new TextEncoder().encode('{"QueueName":"q"}');

  /** A request to the sqs service signed with the suite's key at T. */
  async function signed(overrides: { secret?: string; accessKeyId?: string; body?: Uint8Array } = {}) {
    const headers = new Headers({
      Host: "edgeq.example",
      "X-Amz-Date": SUITE.amzDate,
      "Content-Type": "application/x-amz-json-1.0",
    });
    const request: SignedRequest = { method: "POST", path: "/", query: "", headers, body };
    const scope = { ...SUITE.scope, service: "sqs", signedHeaders: ["content-type", "host", "x-amz-date"] };
    const signature = await signRequest(request, scope, SUITE.amzDate, overrides.secret ?? SUITE.secret);
    headers.set(
      "Authorization",
      `AWS4-HMAC-SHA256 Credential=${overrides.accessKeyId ?? SUITE.accessKeyId}/20150830/us-east-1/sqs/aws4_request, SignedHeaders=content-type;host;x-amz-date, Signature=${signature}`,
    );
    return { ...request, body: overrides.body ?? body };
  }

  async function refusal(request: SignedRequest, now = T): Promise<string> {
    try {
      await verifySigV4(request, secretFor, now);
    } catch (error) {
      expect(error).toBeInstanceOf(SqsError);
      return (error as SqsError).code;
    }
    throw new Error("verified");
  }

  it("accepts a correct signature within 15 minutes either side", async () => {
    expect(await verifySigV4(await signed(), secretFor, T)).toEqual({
      accessKeyId: SUITE.accessKeyId,
      region: "us-east-1",
    });
    expect(await verifySigV4(await signed(), secretFor, T + 15 * 60_000)).toEqual({
      accessKeyId: SUITE.accessKeyId,
      region: "us-east-1",
    });
    expect(await verifySigV4(await signed(), secretFor, T - 15 * 60_000)).toEqual({
      accessKeyId: SUITE.accessKeyId,
      region: "us-east-1",
    });
  });

  it("refuses an old request, a wrong secret, an unknown key, a changed body, a missing header", async () => {
    expect(await refusal(await signed(), T + 15 * 60_000 + 1000)).toBe("RequestExpired");
    expect(await refusal(await signed({ secret: "not-the-secret" }))).toBe("SignatureDoesNotMatch");
    expect(await refusal(await signed({ accessKeyId: "AKIDUNKNOWN" }))).toBe("InvalidClientTokenId");
    expect(await refusal(await signed({ body: new TextEncoder().encode('{"QueueName":"r"}') }))).toBe(
      "SignatureDoesNotMatch",
    );
    const unsigned = await signed();
    unsigned.headers.delete("Authorization");
    expect(await refusal(unsigned)).toBe("MissingAuthenticationToken");
    const bearer = await signed();
    bearer.headers.set("Authorization", "Bearer test-token");
    expect(await refusal(bearer)).toBe("IncompleteSignature");
  });
});
