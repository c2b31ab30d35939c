import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { EdgeqError } from "../../src/contracts/errors";
import { rateLimitedIfOverloaded } from "../../src/contracts/overloaded";
import { onError } from "../../src/http/error-handler";
import { rpcCall } from "../../src/rpc/rpc-outcome";

/** What D1 throws when it sheds load (the message of a D1_ERROR as the binding reports it). */
const overloaded = () => new Error("D1_ERROR: D1 DB is overloaded. Requests queued for too long.");

describe("D1 overloaded", () => {
  it("is the rate_limited refusal; any other error is not", () => {
    const limited = rateLimitedIfOverloaded(overloaded());
    expect(limited).toBeInstanceOf(EdgeqError);
    expect({ code: limited?.code, message: limited?.message }).toEqual({
      code: "rate_limited",
      message: "the database is overloaded; retry after a second",
    });
    expect(rateLimitedIfOverloaded(new Error("D1_ERROR: no such table: tasks"))).toBeNull();
    expect(rateLimitedIfOverloaded("overloaded")).toBeNull();
  });

  it("is answered over HTTP as 429 rate_limited with Retry-After", async () => {
    const app = new Hono()
      .get("/", () => {
        throw overloaded();
      })
      .onError(onError);
    const res = await app.request("/");
    expect(res.status).toBe(429);
    expect(res.headers.get("Retry-After")).toBe("1");
    expect(await res.json()).toEqual({
      error: { code: "rate_limited", message: "the database is overloaded; retry after a second" },
    });
  });

  it("is answered over RPC as the refusal rate_limited (429)", async () => {
    expect(await rpcCall("get", () => Promise.reject(overloaded()))).toEqual({
      ok: false,
      error: { code: "rate_limited", message: "the database is overloaded; retry after a second", status: 429 },
    });
  });
});
