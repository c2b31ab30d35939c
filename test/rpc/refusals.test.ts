import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { EdgeqError } from "../../src/contracts/errors";
import { edgeqRpc } from "../../src/rpc/edgeq-rpc";
import type { EdgeqService } from "../../src/rpc/edgeq-entrypoint";
import { uniqueQueue } from "../helpers";

/** The Worker's own EdgeqRpc entrypoint through its loopback binding: a real RPC call. */
const binding = () => exports.EdgeqRpc as unknown as EdgeqService;

describe("a refusal across the RPC binding", () => {
  it("resolves as a value with its code, message and status: nothing is thrown in the edgeq Worker", async () => {
    // A rejected RPC call is what workerd logs as the callee's "Uncaught" error; this one resolves.
    const outcome = await binding().get("01ARZ3NDEKTSV4RRFFQ69G5FAV");
    expect(outcome).toEqual({
      ok: false,
      error: { code: "not_found", message: "task 01ARZ3NDEKTSV4RRFFQ69G5FAV not found", status: 404 },
    });
  });

  it("answers { ok: true, value } with the HTTP API's answer when it is not refused", async () => {
    const queue = uniqueQueue("rpc-outcome");
    const outcome = await binding().enqueue(queue, { payload: 1 });
    expect(outcome).toMatchObject({ ok: true, value: { tasks: [{ deduplicated: false, state: "pending" }] } });
  });

  it("is thrown as the one EdgeqError class by edgeqRpc, in the caller", async () => {
    const queue = uniqueQueue("rpc-refusal");
    const refused = await edgeqRpc(binding())
      // @ts-expect-error priority is a number (a plain-JS caller reaches the schema)
      .enqueue(queue, { payload: 1, priority: "high" })
      .then(
        () => null,
        (error: unknown) => error,
      );
    expect(refused).toBeInstanceOf(EdgeqError);
    expect(refused).toMatchObject({ code: "invalid_request", status: 400, transient: false });
    expect((refused as EdgeqError).message).toMatch(/^priority: /);
    expect(await edgeqRpc(binding()).list(queue)).toMatchObject({ tasks: [] });
  });

  it("edgeqRpc is not a thenable: awaiting it calls nothing", async () => {
    const wrapped = edgeqRpc(binding());
    expect(await wrapped).toBe(wrapped);
  });
});
