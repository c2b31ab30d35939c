import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { EdgeqError } from "../../src/contracts/errors";
import { edgeqErrorOf } from "../../src/rpc/rpc-errors";
import { uniqueQueue } from "../helpers";

/** The Worker's own EdgeqRpc entrypoint through its loopback binding: a real RPC call. */
const edgeq = () => exports.EdgeqRpc;

/** What the caller caught from a refused call. */
async function caught(call: Promise<unknown>): Promise<unknown> {
  try {
    await call;
  } catch (error) {
    return error;
  }
  throw new Error("the call was not refused");
}

describe("a refusal across the RPC binding", () => {
  it("arrives as an Error named EdgeqError carrying its code and status", async () => {
    const error = (await caught(edgeq().get("01ARZ3NDEKTSV4RRFFQ69G5FAV"))) as Error & Record<string, unknown>;
    // What workerd hands the caller: a plain Error (never the thrower's class), its name and own
    // properties kept — more than Cloudflare's docs promise, so edgeqErrorOf also reads the message.
    expect(error).toBeInstanceOf(Error);
    expect(error).not.toBeInstanceOf(EdgeqError);
    expect(error.name).toBe("EdgeqError");
    expect(error.code).toBe("not_found");
    expect(error.status).toBe(404);
    expect(error.message).toBe("edgeq not_found: task 01ARZ3NDEKTSV4RRFFQ69G5FAV not found");
  });

  it("is turned back into the one EdgeqError class by edgeqErrorOf", async () => {
    const queue = uniqueQueue("rpc-refusal");
    const refused = edgeqErrorOf(
      // @ts-expect-error priority is a number (a plain-JS caller reaches the schema)
      await caught(edgeq().enqueue(queue, { payload: 1, priority: "high" })),
    );
    expect(refused).toBeInstanceOf(EdgeqError);
    expect(refused).toMatchObject({ code: "invalid_request", status: 400, transient: false });
    expect(refused?.message).toMatch(/^priority: /);
  });

  it("reads the code from the message when no property crossed", () => {
    const bare = new Error("edgeq lease_lost: task t: the lease token is not current");
    expect(edgeqErrorOf(bare)).toMatchObject({
      code: "lease_lost",
      status: 409,
      message: "task t: the lease token is not current",
    });
    expect(edgeqErrorOf(new Error("Network connection lost."))).toBeNull();
    expect(edgeqErrorOf("edgeq not_found: x")).toBeNull();
  });
});
