import { exports } from "cloudflare:workers";
import { ulid } from "ulid";
import { describe, expect, it } from "vitest";
import { EdgeqError } from "../../src/contracts/errors";
import { edgeqRpc } from "../../src/rpc/edgeq-rpc";
import type { EdgeqService } from "../../src/rpc/edgeq-entrypoint";
import { snapshot, uniqueQueue } from "../helpers";

/** The Worker's own EdgeqRpc entrypoint through its loopback binding: a real RPC call, no HTTP. */
const edgeq = () => edgeqRpc(exports.EdgeqRpc as unknown as EdgeqService);

describe("the Workers RPC binding's enqueue", () => {
  it("refuses an id of another queue with the HTTP API's code and message; nothing is enqueued", async () => {
    const [a, b] = [uniqueQueue("rpc-ida"), uniqueQueue("rpc-idb")];
    const id = ulid();
    await edgeq().enqueue(a, { id });
    const fresh = ulid();

    const refused = await edgeq()
      .enqueue(b, { tasks: [{ id: fresh }, { id }] })
      .then(
        () => null,
        (error: unknown) => (error instanceof EdgeqError ? { code: error.code, message: error.message } : error),
      );
    expect(refused).toEqual({
      code: "id_in_other_queue",
      message: `tasks[1].id: ${id} belongs to queue ${a}; task ids are unique across queues, so nothing was enqueued`,
    });
    expect(await snapshot(b)).toEqual([]);
    expect(await edgeq().get(id)).toMatchObject({ id, queue: a });
  });
});
