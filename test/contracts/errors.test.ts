import { describe, expect, it } from "vitest";
import * as client from "../../src/client";
import { CLIENT_ERRORS, EdgeqError, ERRORS, LeaseLostError, type EdgeqErrorCode } from "../../src/contracts/errors";

describe("one EdgeqError", () => {
  it("is the class edgeq/client exports: what either side throws is an instance of the other's", async () => {
    expect(client.EdgeqError).toBe(EdgeqError);
    // Thrown by the engine, caught by code that imported the client's class.
    expect(new LeaseLostError("t1")).toBeInstanceOf(client.EdgeqError);
    // Thrown by the client (a queue name it refuses before any request), caught with the Worker's class.
    const edgeq = new client.EdgeqClient({ url: "http://127.0.0.1:9", token: "t" });
    const refused = await edgeq.stats("..").catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(EdgeqError);
    expect(refused).toMatchObject({ name: "EdgeqError", code: "invalid_request", status: 0, transient: false });
  });

  it("takes its status from the error table unless told otherwise (the client's status as it got it)", () => {
    for (const { code, status } of ERRORS) expect(new EdgeqError(code, "m").status, code).toBe(status);
    for (const { code } of CLIENT_ERRORS) expect(new EdgeqError(code, "m").status, code).toBe(0);
    expect(new EdgeqError("lease_lost", "m", { status: 0 }).status).toBe(0);
    expect(new EdgeqError("bad_response", "m", { status: 502 }).status).toBe(502);
    const cause = new TypeError("fetch failed");
    expect(new EdgeqError("unreachable", "m", { cause }).cause).toBe(cause);
  });

  it("is transient as its code's row says, or for a 429 or 5xx of a code it does not know", () => {
    for (const { code, transient } of [...ERRORS, ...CLIENT_ERRORS]) {
      expect(new EdgeqError(code, "m", { status: 0 }).transient, code).toBe(transient);
    }
    expect(ERRORS.filter((e) => e.transient).map((e) => e.code)).toEqual([
      "rate_limited",
      "internal",
      "not_configured",
      "shard_unavailable",
      "task_moving",
    ]);
    // Rules that see only a status (`edgeq enqueue`'s retries, a code this client does not know) hold as
    // long as a row is transient exactly when its status is 429 or 5xx.
    for (const { code, status, transient } of ERRORS) expect(status === 429 || status >= 500, code).toBe(transient);
    expect(new EdgeqError("bad_response", "m", { status: 502 }).transient).toBe(true);
    expect(new EdgeqError("bad_response", "m", { status: 200 }).transient).toBe(false);
    // A code of a newer server: its status decides.
    const newer = (status: number) => new EdgeqError("queue_paused" as EdgeqErrorCode, "m", { status }).transient;
    expect([newer(429), newer(503), newer(409)]).toEqual([true, true, false]);
  });
});
