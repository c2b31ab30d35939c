/**
 * The worker session's wire, without zod (the Node SDK's worker reads it: src/node/worker-session.ts, whose
 * bundle carries no schema library): the constants, the holder mark, and its two messages read by hand. The
 * server's schemas of the same are in session.ts.
 */

/** A session id: 16 to 40 letters and digits (session.ts `SessionId`). */
const SESSION_ID = "[A-Za-z0-9]{16,40}";
export const SESSION_ID_PATTERN = new RegExp(`^${SESSION_ID}$`);
/** A holder name under some session: it ends with the session's mark (sessionHolderSuffix). */
const SESSION_HOLDER_PATTERN = new RegExp(` @${SESSION_ID}$`);

/** How long a session's lease is written for: its backstop. The coordinator lapses a session's leases
 * within its timeout of the worker going; this bound holds only where the coordinator itself loses the
 * session (reset by a deploy while the worker also went): the leases then lapse on their own. 5 minutes: a
 * task of up to 2.5 minutes is never written again while it runs; a longer one is extended by its worker
 * once per half of it (one row per 150 s, not one per beat). */
export const SESSION_LEASE_S = 300;

/** A session's timeout bounds: how long a closed session may be resumed, and how long one may go without a
 * ping, before its leases lapse. 5 s at least (a ping every third of it must cross the network); 120 s at
 * most (a dead worker's tasks wait at most that long, as with a visibility timeout). Default 30 s. */
export const MIN_SESSION_TIMEOUT_S = 5;
export const MAX_SESSION_TIMEOUT_S = 120;
export const DEFAULT_SESSION_TIMEOUT_S = 30;

/** What a client sends to keep its session alive, and the answer (without waking the coordinator). */
export const SESSION_PING = "ping";
export const SESSION_PONG = "pong";

/** The coordinator's first message on a session's socket. */
export interface SessionHelloMessage {
  type: "session";
  id: string;
  timeout_s: number;
  lease_s: number;
}

/** The coordinator's word that a cancel was requested of a task some session holds. */
export interface SessionCheckMessage {
  type: "check";
}

/** A text message of a session's socket as the worker reads it: a hello, a check, or null (a `pong`, or
 * anything else: ignored). */
export function readSessionMessage(text: string): SessionHelloMessage | SessionCheckMessage | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof value !== "object" || value === null) return null;
  const m = value as Record<string, unknown>;
  if (m.type === "check") return { type: "check" };
  const hello =
    m.type === "session" &&
    typeof m.id === "string" &&
    SESSION_ID_PATTERN.test(m.id) &&
    Number.isInteger(m.timeout_s) &&
    Number.isInteger(m.lease_s);
  return hello
    ? { type: "session", id: m.id as string, timeout_s: m.timeout_s as number, lease_s: m.lease_s as number }
    : null;
}

/** Whether `holder` is a lease holder under some worker session (its mark: sessionHolderSuffix). */
export function isSessionHolder(holder: string | null): boolean {
  return holder !== null && SESSION_HOLDER_PATTERN.test(holder);
}

/** The ending of the holder name a session's leases are stored under. */
export function sessionHolderSuffix(session: string): string {
  return ` @${session}`;
}

/** The holder name of a lease taken under `session`: the client's name (if any) and the session's mark. */
export function sessionHolder(holder: string | null, session: string): string {
  return `${holder ?? "session"}${sessionHolderSuffix(session)}`;
}
