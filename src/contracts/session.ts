import * as z from "zod";
import {
  DEFAULT_SESSION_TIMEOUT_S,
  MAX_SESSION_TIMEOUT_S,
  MIN_SESSION_TIMEOUT_S,
  SESSION_ID_PATTERN,
  type SessionCheckMessage,
  type SessionHelloMessage,
} from "./session-wire";

export * from "./session-wire";

/**
 * Worker sessions (GET /v1/queues/{queue}/session, src/coordinator/sessions.ts): a WebSocket a worker keeps
 * open to its queue's coordinator while it runs tasks. A lease sent with `session` is the session's: it is
 * written once, SESSION_LEASE_S long, and then kept by the socket — pings the coordinator answers without
 * waking (no D1 row, no Worker request a beat) — and ended by it: when the socket closes and is not resumed
 * within the session's timeout, or goes quiet for that long, the coordinator lapses every lease the session
 * holds at once, as if their visibility timeout had run out.
 */

/** A session's id: chosen by the client (so a reconnect resumes it) or by the coordinator. Letters and digits
 * only — it ends the holder name its leases are stored under, and is matched there as a plain suffix — and
 * 16 to 40 of them: at least 80 random bits, so no other client names it by chance. */
export const SessionId = z
  .string()
  .regex(SESSION_ID_PATTERN, "16 to 40 letters and digits")
  .meta({ description: "a session's id (GET /v1/queues/{queue}/session): 16 to 40 letters and digits" });

/** The session's query: its id to resume one, and its timeout. */
export const SessionQuery = z.object({
  id: SessionId.optional(),
  timeout_s: z.coerce
    .number()
    .int()
    .min(MIN_SESSION_TIMEOUT_S)
    .max(MAX_SESSION_TIMEOUT_S)
    .default(DEFAULT_SESSION_TIMEOUT_S)
    .meta({ description: "how long the session may go quiet, or stay closed, before its leases lapse" }),
});

/** The coordinator's first message on a session's socket. */
export const SessionHello = z.object({
  type: z.literal("session"),
  id: SessionId,
  timeout_s: z.number().int(),
  lease_s: z.number().int(),
}) satisfies z.ZodType<SessionHelloMessage>;

/** The coordinator's word that a cancel was requested of a task some session holds: extend your leases now
 * (the cancelled one answers `task_cancelled`). */
export const SessionCheck = z.object({ type: z.literal("check") }) satisfies z.ZodType<SessionCheckMessage>;

/** What the coordinator sends on a session's socket (besides `pong`). */
export const SessionMessage = z.union([SessionHello, SessionCheck]);
