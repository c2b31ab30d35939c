import { createMiddleware } from "hono/factory";
import { EdgeqError } from "../contracts/errors";
import { DEV_TOKEN } from "../contracts/limits";
import { acceptedTokens, readSettings } from "../env";
import type { AppEnv } from "./app-env";
import { errorResponse } from "./error-handler";

/** The token `npm start` uses when EDGEQ_TOKEN is not set (development only; printed at start). */
export { DEV_TOKEN };

const encoder = new TextEncoder();

/** Compares in time independent of where the strings differ. */
function safeEqual(a: string, b: string): boolean {
  const left = encoder.encode(a);
  const right = encoder.encode(b);
  if (left.byteLength !== right.byteLength) return false;
  return crypto.subtle.timingSafeEqual(left, right);
}

/**
 * Bearer-token auth for /v1. The tokens are acceptedTokens' (src/env.ts): production without EDGEQ_TOKEN
 * refuses to serve (503 not_configured) rather than run open; development without it accepts DEV_TOKEN.
 */
export const requireBearer = createMiddleware<AppEnv>(async (c, next) => {
  const tokens = acceptedTokens(readSettings(c.env));
  if (tokens.length === 0) {
    return errorResponse(
      c,
      new EdgeqError("not_configured", "EDGEQ_TOKEN is not set; refusing to serve without authentication"),
    );
  }
  const header = c.req.header("Authorization") ?? "";
  const match = /^Bearer\s+(.+)$/i.exec(header);
  const presented = match?.[1]?.trim();
  if (!presented || !tokens.some((t) => safeEqual(t, presented))) {
    return errorResponse(c, new EdgeqError("unauthorized", "send Authorization: Bearer <EDGEQ_TOKEN>"), {
      "WWW-Authenticate": 'Bearer realm="edgeq"',
    });
  }
  await next();
});
