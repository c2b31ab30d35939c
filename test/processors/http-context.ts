import { inject } from "vitest";
import type { ReceivedRequest } from "../support/webhook-receiver";
import { testContext, type TestContext, type TestContextOptions } from "./context";

/** A URL on the real webhook receiver started by test/support/webhook-receiver.ts. */
export function receiverUrl(path: string): string {
  return `http://127.0.0.1:${inject("webhookPort")}${path}`;
}

/** What the receiver recorded for `path` (query string included), oldest first. */
export async function receivedAt(path: string): Promise<ReceivedRequest[]> {
  const response = await fetch(receiverUrl(`/__requests?path=${encodeURIComponent(path)}`));
  return response.json();
}

/**
 * The shared test context (./context.ts, clock fixed at T0) for an `http` task, with WEBHOOK_SECRET set
 * to the secret the receiver verifies with — unless `env` replaces it (`{ WEBHOOK_SECRET: undefined }`).
 *
 * @example
 * const { ctx } = httpContext({ attempt: 2 });
 * await httpProcessor.run(httpProcessor.payload.parse({ url: receiverUrl("/ok") }), ctx);
 */
export function httpContext(options: TestContextOptions = {}): TestContext {
  return testContext({ type: "http", ...options, env: { WEBHOOK_SECRET: inject("webhookSecret"), ...options.env } });
}
