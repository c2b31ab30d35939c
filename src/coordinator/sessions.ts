import {
  SESSION_LEASE_S,
  SESSION_PING,
  SESSION_PONG,
  SessionQuery,
  type SessionCheckMessage,
  type SessionHelloMessage,
} from "../contracts/session";

/** The tag of a session's socket among the coordinator's hibernatable sockets. */
const SESSION_TAG = "session";
/** Storage key prefix of a session closed and not yet resumed: `{ closedAt, timeoutMs }`. */
const CLOSED_PREFIX = "session-closed:";

/** What a session's socket carries through hibernation. `ended`: the coordinator closed it itself (timed
 * out, or replaced by a newer socket of the same session), so its close is no news. */
interface SessionAttachment {
  id: string;
  timeoutMs: number;
  openedAt: number;
  ended?: true;
}

interface ClosedSession {
  closedAt: number;
  timeoutMs: number;
}

/** What the sessions need of their coordinator. */
export interface SessionHost {
  readonly ctx: DurableObjectState;
  now(): number;
  /** Lapses every lease the session holds, and reports what that changed. */
  lapse(session: string): Promise<void>;
  alarmNoLaterThan(at: number): Promise<void>;
}

/**
 * The worker sessions of a queue (src/contracts/session.ts), held by its partition-0 coordinator: WebSockets
 * accepted for hibernation, each carrying only its session's id, timeout and opening time — the leases a
 * session holds are found in the task store by their holder mark when it ends, so nothing is written per task
 * or per beat. A client's `ping` is answered `pong` by the runtime without waking the object
 * (`setWebSocketAutoResponse`); the alarm reads when each socket was last answered.
 *
 * A session ends — its leases lapse at once — when its socket has been closed for its timeout without a
 * socket of the same id taking its place (a reconnect resumes it, leases and all), or when its socket has
 * had no ping for its timeout (it is then closed, code 4000). Closing is noted in storage (one key, put on the
 * close and deleted on the resume or the lapse), so a close survives the object's eviction.
 */
export class WorkerSessions {
  constructor(private readonly host: SessionHost) {}

  /** Answers a session's upgrade (forwarded by src/http/routes/sessions.ts, its query already checked). */
  async open(url: URL): Promise<Response> {
    const parsed = SessionQuery.safeParse(Object.fromEntries(url.searchParams));
    if (!parsed.success) return new Response(null, { status: 400 });
    const { ctx } = this.host;
    const now = this.host.now();
    const id = parsed.data.id ?? crypto.randomUUID().replaceAll("-", "");
    const timeoutMs = parsed.data.timeout_s * 1000;
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair(SESSION_PING, SESSION_PONG));
    // One socket per session: a reconnect that came before its old socket's close replaces that socket.
    for (const old of this.socketsOf(id)) this.end(old, 4001, "replaced by a newer connection of this session");
    if ((await ctx.storage.get(CLOSED_PREFIX + id)) !== undefined) await ctx.storage.delete(CLOSED_PREFIX + id);
    const pair = new WebSocketPair();
    const [client, server] = [pair[0], pair[1]];
    ctx.acceptWebSocket(server, [SESSION_TAG]);
    server.serializeAttachment({ id, timeoutMs, openedAt: now } satisfies SessionAttachment);
    const hello: SessionHelloMessage = {
      type: "session",
      id,
      timeout_s: parsed.data.timeout_s,
      lease_s: SESSION_LEASE_S,
    };
    server.send(JSON.stringify(hello));
    await this.host.alarmNoLaterThan(now + timeoutMs);
    return new Response(null, { status: 101, webSocket: client });
  }

  /** Tells every open session to extend its leases now (`{"type":"check"}`): a cancel was requested of a task
   * one of them holds, and its worker learns it from the extension's answer (`task_cancelled`). */
  check(): void {
    const message = JSON.stringify({ type: "check" } satisfies SessionCheckMessage);
    for (const ws of this.host.ctx.getWebSockets(SESSION_TAG)) {
      if (attachmentOf(ws)?.ended) continue;
      try {
        ws.send(message);
      } catch {
        // closing: its close is handled
      }
    }
  }

  /** Whether `ws` is a session's socket. */
  owns(ws: WebSocket): boolean {
    return this.host.ctx.getTags(ws).includes(SESSION_TAG);
  }

  /** A session's socket closed (its client, the network, the runtime): it may be resumed within its timeout,
   * after which the alarm lapses its leases. */
  async closed(ws: WebSocket): Promise<void> {
    const session = attachmentOf(ws);
    if (!session || session.ended) return;
    if (this.socketsOf(session.id).some((other) => other !== ws)) return;
    const now = this.host.now();
    await this.host.ctx.storage.put(CLOSED_PREFIX + session.id, {
      closedAt: now,
      timeoutMs: session.timeoutMs,
    } satisfies ClosedSession);
    await this.host.alarmNoLaterThan(now + session.timeoutMs);
  }

  /**
   * The alarm's part: ends the sessions quiet for their timeout (closing their sockets) and those closed for
   * it, lapsing their leases. Returns when to look again (the next session that could run out), or null.
   */
  async sweep(): Promise<number | null> {
    const { ctx } = this.host;
    const now = this.host.now();
    let next = Infinity;
    const open = new Set<string>();
    for (const ws of ctx.getWebSockets(SESSION_TAG)) {
      const session = attachmentOf(ws);
      // A socket closing is not open: its close handler notes it (and a closed one is no longer listed).
      if (!session || session.ended || ws.readyState !== WebSocket.OPEN) continue;
      // The runtime's clock (it answered the ping); the opening on this object's.
      const seen = Math.max(session.openedAt, ctx.getWebSocketAutoResponseTimestamp(ws)?.getTime() ?? 0);
      if (now - seen >= session.timeoutMs) {
        // Lapsed before the close: a worker told 4000 holds nothing any more, and a lapse that fails leaves the
        // socket open and quiet, so the alarm's retry finds it again (closed first, it would be skipped).
        await this.host.lapse(session.id);
        this.end(ws, 4000, `no ping for ${session.timeoutMs / 1000} s: the session ended and its leases lapsed`);
        continue;
      }
      open.add(session.id);
      next = Math.min(next, seen + session.timeoutMs);
    }
    for (const [key, closed] of await ctx.storage.list<ClosedSession>({ prefix: CLOSED_PREFIX })) {
      const id = key.slice(CLOSED_PREFIX.length);
      if (!open.has(id) && now < closed.closedAt + closed.timeoutMs) {
        next = Math.min(next, closed.closedAt + closed.timeoutMs);
        continue;
      }
      if (!open.has(id)) await this.host.lapse(id);
      await ctx.storage.delete(key);
    }
    return Number.isFinite(next) ? next : null;
  }

  /** The open sockets of session `id`. */
  private socketsOf(id: string): WebSocket[] {
    return this.host.ctx.getWebSockets(SESSION_TAG).filter((ws) => {
      const session = attachmentOf(ws);
      return session !== null && !session.ended && session.id === id && ws.readyState === WebSocket.OPEN;
    });
  }

  /** Closes a socket the coordinator ends itself, marked so that its close changes nothing more. */
  private end(ws: WebSocket, code: number, reason: string): void {
    const session = attachmentOf(ws);
    if (session) ws.serializeAttachment({ ...session, ended: true } satisfies SessionAttachment);
    try {
      ws.close(code, reason);
    } catch {
      // already closed
    }
  }
}

function attachmentOf(ws: WebSocket): SessionAttachment | null {
  return (ws.deserializeAttachment() as SessionAttachment | null) ?? null;
}
