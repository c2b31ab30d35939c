import { SQSClient, type SQSClientConfig } from "@aws-sdk/client-sqs";
import { SQS_DEV_ACCESS_KEY_ID, SQS_DEV_SECRET_ACCESS_KEY } from "../../src/contracts/limits";
import { edgeqUrl } from "./worker-support";

/**
 * An unchanged `@aws-sdk/client-sqs` client pointed at the test server: only endpoint, region and
 * credentials (the development pair) are set — plus maxAttempts 1, so a refused request fails the test at
 * once instead of being retried.
 */
export function sqsClient(overrides: Partial<SQSClientConfig> = {}): SQSClient {
  return new SQSClient({
    endpoint: edgeqUrl(),
    region: "us-east-1",
    credentials: { accessKeyId: SQS_DEV_ACCESS_KEY_ID, secretAccessKey: SQS_DEV_SECRET_ACCESS_KEY },
    maxAttempts: 1,
    ...overrides,
  });
}

/** The error a promise rejects with (fails when it resolves). */
export async function rejection(
  promise: Promise<unknown>,
): Promise<Error & { $metadata?: { httpStatusCode?: number } }> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error("expected the call to fail, it succeeded");
}
