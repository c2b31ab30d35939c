import { EVENT_TICKET_TTL_S } from "../contracts/limits";

/**
 * Short-lived tickets for the events WebSocket: browsers cannot set an Authorization header on a
 * WebSocket, and a bearer token in a URL gets logged. A ticket is `v1.<expires ms>.<signature>`, the
 * signature an HMAC-SHA256 of `v1.<expires ms>` under a key derived from the token (HMAC(token, label)),
 * so the token itself never travels in the URL and no ticket outlives EVENT_TICKET_TTL_S.
 */
const encoder = new TextEncoder();
const KEY_LABEL = "edgeq events ticket v1";

async function hmac(key: Uint8Array | string, data: string): Promise<Uint8Array> {
  const raw = typeof key === "string" ? encoder.encode(key) : key;
  const cryptoKey = await crypto.subtle.importKey("raw", raw, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return new Uint8Array(await crypto.subtle.sign("HMAC", cryptoKey, encoder.encode(data)));
}

function base64url(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes))
    .replaceAll("+", "-")
    .replaceAll("/", "_")
    .replace(/=+$/, "");
}

async function sign(token: string, body: string): Promise<string> {
  return base64url(await hmac(await hmac(token, KEY_LABEL), body));
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
  for (const token of tokens) {
    const expected = encoder.encode(await sign(token, body));
    const given = encoder.encode(signature);
    if (expected.byteLength === given.byteLength && crypto.subtle.timingSafeEqual(expected, given)) signed = true;
  }
  if (!signed) return "the ticket's signature does not match";
  if (Number(expires) <= now) return "the ticket has expired; ask POST /v1/events/tickets for a new one";
  return null;
}
