import { hmacSha256, timingSafeEqual } from "../contracts/crypto";
import { EVENT_TICKET_TTL_S } from "../contracts/limits";

/**
 * Short-lived tickets for the events WebSocket: browsers cannot set an Authorization header on a
 * WebSocket, and a bearer token in a URL gets logged. A ticket is `v1.<expires ms>.<signature>`, the
 * signature an HMAC-SHA256 of `v1.<expires ms>` under a key derived from the token (HMAC(token, label)),
 * so the token itself never travels in the URL and no ticket outlives EVENT_TICKET_TTL_S.
 */
const KEY_LABEL = "edgeq events ticket v1";

function base64url(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes))
    .replaceAll("+", "-")
    .replaceAll("/", "_")
    .replace(/=+$/, "");
}

async function sign(token: string, body: string): Promise<string> {
  return base64url(await hmacSha256(await hmacSha256(token, KEY_LABEL), body));
}

/**
 * Issues a ticket valid until `now + EVENT_TICKET_TTL_S`.
 *
 * @example
 * const { ticket, expiresAt } = await issueTicket("secret", Date.now());
 */
export async function issueTicket(token: string, now: number): Promise<{ ticket: string; expiresAt: number }> {
  const expiresAt = now + EVENT_TICKET_TTL_S * 1000;
  const body = `v1.${expiresAt}`;
  return { ticket: `${body}.${await sign(token, body)}`, expiresAt };
}

/** Why a ticket was refused (for the 401's message), or null when it is good for one of `tokens`. */
export async function ticketProblem(ticket: string, tokens: string[], now: number): Promise<string | null> {
  const match = /^(v1\.(\d{1,16}))\.([A-Za-z0-9_-]{43})$/.exec(ticket);
  if (!match) return "the ticket is malformed";
  const [, body = "", expires = "", signature = ""] = match;
  let signed = false;
  // Every token is tried (no early exit), so the time taken does not say which one signed it.
  for (const token of tokens) signed = timingSafeEqual(await sign(token, body), signature) || signed;
  if (!signed) return "the ticket's signature does not match";
  if (Number(expires) <= now) return "the ticket has expired; ask POST /v1/events/tickets for a new one";
  return null;
}
