import { createMiddleware } from "hono/factory";
import { EdgeqError } from "../engine/errors";
import type { AppEnv } from "./app-env";

/** What @hono/zod-openapi treats as a JSON body (`application/json`, `application/…+json`, any parameters). */
const JSON_MEDIA_TYPE = /^application\/([a-z-.]+\+)?json/i;

/** Throws on the first malformed byte instead of substituting U+FFFD, as `Request.text()` does. */
const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

/**
 * Refuses a JSON body that is not valid UTF-8 (400 `invalid_request`) instead of letting the parser replace
 * the bad bytes with U+FFFD and storing something the client never sent (RFC 8259 §8.1: JSON is UTF-8).
 * The body is read once: Hono caches the bytes, and the route's validator parses them from that cache.
 */
export const requireUtf8Json = createMiddleware<AppEnv>(async (c, next) => {
  if (c.req.raw.body !== null && JSON_MEDIA_TYPE.test(c.req.header("Content-Type") ?? "")) {
    const bytes = await c.req.arrayBuffer();
    try {
      strictUtf8.decode(bytes);
    } catch {
      throw new EdgeqError("invalid_request", "the body is not valid UTF-8 (JSON must be sent as UTF-8)");
    }
  }
  await next();
});
