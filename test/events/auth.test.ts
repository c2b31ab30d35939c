import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { EVENT_TICKET_TTL_S } from "../../src/contracts/limits";
import { issueTicket } from "../../src/events/tickets";
import { call, enqueueOne, expectError, ORIGIN, read, TOKEN } from "../http/api";
import { uniqueQueue } from "../helpers";
import { ticket } from "./socket";

/** An upgrade request for `path` with the given headers. */
function upgrade(path: string, headers: Record<string, string> = {}) {
  return exports.default.fetch(new Request(`${ORIGIN}${path}`, { headers: { Upgrade: "websocket", ...headers } }));
}

describe("events auth", () => {
  it("issues tickets only to a bearer of the token", async () => {
    expectError(await call("POST", "/v1/events/tickets", { token: null }), 401, "unauthorized");
    const res = await call<{ ticket: string; expires_at: string }>("POST", "/v1/events/tickets");
    expect(res.status).toBe(200);
    const ttl = Date.parse(res.body.expires_at) - Date.now();
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(EVENT_TICKET_TTL_S * 1000);
  });

  it("refuses the upgrade without a ticket, with a wrong one, or with an expired one", async () => {
    const queue = uniqueQueue("auth");
    const path = `/v1/queues/${queue}/events`;
    const good = await ticket();
    const forged = good.slice(0, -4) + (good.endsWith("AAAA") ? "BBBB" : "AAAA");
    const expired = (await issueTicket(TOKEN, Date.now() - 2 * EVENT_TICKET_TTL_S * 1000)).ticket;
    const otherToken = (await issueTicket("not-the-token", Date.now())).ticket;
    for (const [res, message] of [
      [await upgrade(path), /ticket/],
      [await upgrade(`${path}?ticket=${forged}`), /signature/],
      [await upgrade(`${path}?ticket=${otherToken}`), /signature/],
      [await upgrade(`${path}?ticket=${expired}`), /expired/],
      [await upgrade(`${path}?ticket=junk`), /malformed/],
      [await upgrade(path, { "Sec-WebSocket-Protocol": `edgeq.events.v1, edgeq.ticket.${expired}` }), /expired/],
      [await upgrade(path, { Authorization: "Bearer wrong" }), /ticket/],
      // The bearer check is requireBearer's (isAcceptedToken): a prefix or an extension of the token is not it.
      [await upgrade(path, { Authorization: `Bearer ${TOKEN.slice(0, -1)}` }), /ticket/],
      [await upgrade(path, { Authorization: `Bearer ${TOKEN}x` }), /ticket/],
    ] as const) {
      expect(res.webSocket).toBeNull();
      expectError(await read(res), 401, "unauthorized", message);
    }
  });

  it("accepts a ticket in the query or as a subprotocol (answering with edgeq.events.v1), or a bearer token", async () => {
    const queue = uniqueQueue("auth-ok");
    const path = `/v1/queues/${queue}/events`;
    const viaQuery = await upgrade(`${path}?ticket=${await ticket()}`);
    expect(viaQuery.status).toBe(101);
    const viaProtocol = await upgrade(path, {
      "Sec-WebSocket-Protocol": `edgeq.events.v1, edgeq.ticket.${await ticket()}`,
    });
    expect(viaProtocol.status).toBe(101);
    expect(viaProtocol.headers.get("Sec-WebSocket-Protocol")).toBe("edgeq.events.v1");
    const viaBearer = await upgrade(path, { Authorization: `Bearer ${TOKEN}` });
    expect(viaBearer.status).toBe(101);
    for (const res of [viaQuery, viaProtocol, viaBearer]) {
      res.webSocket!.accept();
      res.webSocket!.close(1000, "done");
    }
  });

  it("answers 400 for a plain GET, 400 naming `after` for a bad resume point, 404 for an unknown task", async () => {
    const queue = uniqueQueue("auth-bad");
    const good = await ticket();
    const plain = await exports.default.fetch(new Request(`${ORIGIN}/v1/queues/${queue}/events?ticket=${good}`));
    expectError(await read(plain), 400, "invalid_request", /websocket/i);
    expectError(
      await read(await upgrade(`/v1/queues/${queue}/events?ticket=${good}&after=-1`)),
      400,
      "invalid_request",
      /after/,
    );
    await enqueueOne(queue);
    expectError(
      await read(await upgrade(`/v1/tasks/01ARZ3NDEKTSV4RRFFQ69G5FAV/events?ticket=${good}`)),
      404,
      "not_found",
    );
  });
});
