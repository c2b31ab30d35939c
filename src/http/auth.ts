import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import { timingSafeEqual } from "../contracts/crypto";
import { EdgeqError } from "../contracts/errors";
import { DEV_TOKEN } from "../contracts/limits";
import { acceptedTokens, readSettings } from "../env";
import type { AppEnv } from "./app-env";
import { errorResponse } from "./error-handler";

/** The token `npm start` uses when EDGEQ_TOKEN is not set (development only; printed at start). */
export { DEV_TOKEN };

/** The token of the request's `Authorization: Bearer <token>` header, or undefined when it has none. */
export function presentedToken(c: Context): string | undefined {
  return /^Bearer\s+(.+)$/i.exec(c.req.header("Authorization") ?? "")?.[1]?.trim();
}

/**
 * Whether `presented` is one of `tokens` (acceptedTokens, src/env.ts), each compared in constant time: the
 * one check of a bearer token, for /v1 and the event sockets alike.
 *
 * @example
 * isAcceptedToken(acceptedTokens(readSettings(c.env)), presentedToken(c));
 */
export function isAcceptedToken(tokens: readonly string[], presented: string | undefined): boolean {
  return presented !== undefined && presented !== "" && tokens.some((t) => timingSafeEqual(t, presented));
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
  if (!isAcceptedToken(tokens, presentedToken(c))) {
    return errorResponse(c, new EdgeqError("unauthorized", "send Authorization: Bearer <EDGEQ_TOKEN>"), {
      "WWW-Authenticate": 'Bearer realm="edgeq"',
    });
  }
  await next();
});
