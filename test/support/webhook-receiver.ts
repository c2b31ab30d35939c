/**
 * Vitest globalSetup (runs in Node, not workerd): a real webhook receiver on 127.0.0.1 for the `http`
 * processor's tests. It checks each request's signature with node:crypto — an implementation independent
 * of src/processors/webhook-signature.ts — records what it received, and answers per path:
 *
 * - `/ok` 200 JSON · `/big?n=&unit=` 200 with `unit` ("x" unless given) n times · `/no-content` 204
 * - `/redirect?to=` 302 to `to` (/ok unless given)
 * - `/bad` 400 JSON · `/teapot-429` 429 without Retry-After
 * - `/flaky?retry_after=` 503 with Retry-After (7 unless given) · `/date-retry?at=` 503 with an HTTP-date Retry-After
 * - `/slow?ms=` answers after ms (5 s unless given) · `/stall-body` sends headers and part of a body, then stalls
 * - `/hangup` closes the connection without answering
 * - `GET /__requests?path=` what was recorded for that exact path (query string included), oldest first
 *
 * Tests read the port and the shared secret with `inject("webhookPort")` / `inject("webhookSecret")`.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { TestProject } from "vitest/node";

/** The secret tests give the processor (as env.WEBHOOK_SECRET) and this receiver verifies with. */
const WEBHOOK_SECRET = "test-webhook-secret";

/** One request as the receiver saw it. */
export interface ReceivedRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string;
  signature_valid: boolean;
  /** The `t=` of the signature header, or null. */
  signed_at: number | null;
}

declare module "vitest" {
  export interface ProvidedContext {
    webhookPort: number;
    webhookSecret: string;
  }
}

function checkSignature(header: string | undefined, body: Buffer): { valid: boolean; signedAt: number | null } {
  const fields = new Map<string, string[]>();
  for (const part of (header ?? "").split(",")) {
    const [key, value] = part.split("=", 2);
    if (key && value) fields.set(key.trim(), [...(fields.get(key.trim()) ?? []), value.trim()]);
  }
  const t = fields.get("t")?.[0];
  if (t === undefined || !/^\d+$/.test(t)) return { valid: false, signedAt: null };
  const expected = createHmac("sha256", WEBHOOK_SECRET).update(`${t}.`).update(body).digest();
  const valid = (fields.get("v1") ?? []).some((hex) => {
    const given = Buffer.from(hex, "hex");
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
  return { valid, signedAt: Number(t) };
}

function json(res: ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(value));
}

function respond(req: IncomingMessage, res: ServerResponse, url: URL): void {
  const query = url.searchParams;
  switch (url.pathname) {
    case "/ok":
      return json(res, 200, { ok: true, method: req.method });
    case "/big":
      res.writeHead(200, { "content-type": "text/plain; charset=utf-8" });
      return void res.end((query.get("unit") ?? "x").repeat(Number(query.get("n") ?? 10_000)));
    case "/no-content":
      res.writeHead(204);
      return void res.end();
    case "/redirect":
      res.writeHead(302, { location: query.get("to") ?? "/ok" });
      return void res.end();
    case "/bad":
      return json(res, 400, { error: "order_id is required" });
    case "/teapot-429":
      return json(res, 429, { error: "slow down" });
    case "/flaky":
      return json(res, 503, { error: "maintenance" }, { "retry-after": query.get("retry_after") ?? "7" });
    case "/date-retry":
      return json(res, 503, { error: "maintenance" }, { "retry-after": query.get("at") ?? "" });
    case "/slow": {
      const timer = setTimeout(() => json(res, 200, { ok: true }), Number(query.get("ms") ?? 5000));
      res.on("close", () => clearTimeout(timer));
      return;
    }
    case "/stall-body":
      res.writeHead(200, { "content-type": "text/plain" });
      res.write("partial ");
      return;
    case "/hangup":
      return void req.socket.destroy();
    default:
      return json(res, 404, { error: `no route ${url.pathname}` });
  }
}

/** Starts the receiver and provides its port; returns the teardown that stops it. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const received: ReceivedRequest[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const url = new URL(req.url ?? "/", "http://receiver");
      if (url.pathname === "/__requests") {
        return json(
          res,
          200,
          received.filter((r) => r.path === url.searchParams.get("path")),
        );
      }
      const body = Buffer.concat(chunks);
      const signature = req.headers["edgeq-signature"];
      const { valid, signedAt } = checkSignature(typeof signature === "string" ? signature : undefined, body);
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(req.headers)) {
        if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(", ") : value;
      }
      received.push({
        method: req.method ?? "",
        path: req.url ?? "",
        headers,
        body: body.toString("utf8"),
        signature_valid: valid,
        signed_at: signedAt,
      });
      respond(req, res, url);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  project.provide("webhookPort", (server.address() as AddressInfo).port);
  project.provide("webhookSecret", WEBHOOK_SECRET);
  return async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
}
