import * as z from "zod";

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
  .regex(/^[A-Za-z0-9]{16,40}$/, "16 to 40 letters and digits")
  .meta({ description: "a session's id (GET /v1/queues/{queue}/session): 16 to 40 letters and digits" });

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
});
export type SessionHello = z.infer<typeof SessionHello>;

/** The coordinator's word that a cancel was requested of a task some session holds: extend your leases now
 * (the cancelled one answers `task_cancelled`). */
export const SessionCheck = z.object({ type: z.literal("check") });
export type SessionCheck = z.infer<typeof SessionCheck>;

/** What the coordinator sends on a session's socket (besides `pong`). */
export const SessionMessage = z.union([SessionHello, SessionCheck]);

/** Whether `holder` is a lease holder under some worker session (its mark: sessionHolderSuffix). */
export function isSessionHolder(holder: string | null): boolean {
  return holder !== null && / @[A-Za-z0-9]{16,40}$/.test(holder);
}

/** The ending of the holder name a session's leases are stored under. */
export function sessionHolderSuffix(session: string): string {
  return ` @${session}`;
}

/** The holder name of a lease taken under `session`: the client's name (if any) and the session's mark. */
export function sessionHolder(holder: string | null, session: string): string {
  return `${holder ?? "session"}${sessionHolderSuffix(session)}`;
}
