import type { EdgeqClient } from "../client/edgeq-client";
import {
  MAX_SESSION_TIMEOUT_S,
  MIN_SESSION_TIMEOUT_S,
  readSessionMessage,
  SESSION_LEASE_S,
  SESSION_PING,
  type SessionHelloMessage,
} from "../contracts/session-wire";

/** What the session needs of a WebSocket: the standard API (Node 22's global WebSocket, or the `ws` package's). */
export interface SessionSocket {
  send(data: string): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: "open" | "message" | "close" | "error", listener: (event: never) => void): void;
}

/** Opens a WebSocket to `url` sending `headers` (the bearer token). */
export type SessionSocketFactory = (url: string, headers: Record<string, string>) => SessionSocket;

/** The platform's WebSocket, if it has one that sends headers (Node 22 and later: undici's), else null. */
export function platformSocketFactory(): SessionSocketFactory | null {
  const Socket = (globalThis as { WebSocket?: new (url: string, init: unknown) => SessionSocket }).WebSocket;
  if (Socket === undefined || typeof process === "undefined") return null;
  return (url, headers) => new Socket(url, { headers });
}

/** A session's timeout by default: the worker's visibility timeout, within the session's bounds — so a dead
 * worker's tasks come back about as soon as they did when its beats kept them (a lease lapsed one visibility
 * timeout after the last beat). */
export function sessionTimeoutFor(visibilityS: number): number {
  return Math.min(MAX_SESSION_TIMEOUT_S, Math.max(MIN_SESSION_TIMEOUT_S, Math.round(visibilityS)));
}

/** How long the first connect may take before the worker goes on without a session: an upgrade answers in a
 * round trip or two; ten seconds is a server or proxy that will not. */
const START_TIMEOUT_MS = 10_000;

/** Waits between reconnects: from 250 ms doubling, never more than a third of the timeout, so a dropped
 * session is resumed (its leases kept) while the server still waits for it. */
const RECONNECT_MIN_MS = 250;

/**
 * A worker's session (GET /v1/queues/{queue}/session, src/coordinator/sessions.ts): one WebSocket to its queue's
 * coordinator that keeps every lease the worker takes under it, instead of an extend call per beat. It pings
 * every third of its timeout (answered by the server's runtime: no D1 row, no Worker request); a dropped socket
 * is reopened with the same id, which resumes the session with its leases if it comes back within the timeout.
 * A `check` from the coordinator (a cancel was requested of a task the session holds) calls `onCheck`: the
 * worker extends its leases at once and hears `task_cancelled` for that task.
 * When the server ended the session (no ping for the timeout: close code 4000), or the socket stayed down for
 * the timeout, its leases have lapsed: `onLost` is told, and the session carries on under the same id for new
 * leases.
 *
 * @example
 * const session = new WorkerSession(client, "emails", factory, 30, console.log, () => beats.loseAll(lost), () => beats.beatNow());
 * if (await session.start()) lease({ ..., session: session.current });
 */
export class WorkerSession {
  private socket: SessionSocket | null = null;
  private id: string | undefined;
  private open = false;
  /** When the socket last dropped, while it is down. */
  private downSince: number | null = null;
  private pinger: ReturnType<typeof setInterval> | undefined;
  private retry: ReturnType<typeof setTimeout> | undefined;
  private lostTimer: ReturnType<typeof setTimeout> | undefined;
  private failures = 0;
  private stopped = false;
  /** The lease length the server writes for the session's leases. */
  leaseS = SESSION_LEASE_S;

  constructor(
    private readonly client: EdgeqClient,
    private readonly queue: string,
    private readonly factory: SessionSocketFactory,
    private readonly timeoutS: number,
    private readonly log: (line: string) => void,
    private readonly onLost: () => void,
    /** The coordinator asked the worker to extend its leases now (a cancel was requested of one). */
    private readonly onCheck: () => void,
  ) {}

  /** The session to lease under now: its id while its socket is open, else null (a plain lease). */
  get current(): string | null {
    return this.open && this.id !== undefined ? this.id : null;
  }

  /** Opens the session; resolves whether it opened (if not, the worker heart-beats its leases instead). A
   * server that has not said hello within START_TIMEOUT_MS is given up on, so a worker never waits on it. */
  start(): Promise<boolean> {
    return new Promise((resolve) => {
      let settled = false;
      const timer = setTimeout(() => {
        if (settled) return;
        settled = true;
        this.log(
          `worker session unavailable (no answer in ${START_TIMEOUT_MS / 1000} s): heart-beating leases instead`,
        );
        this.close();
        resolve(false);
      }, START_TIMEOUT_MS);
      this.connect((ok) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(ok);
      });
    });
  }

  /** Closes the session for good: the worker is done (its leases were acked or handed back). */
  close(): void {
    this.stopped = true;
    clearInterval(this.pinger);
    clearTimeout(this.retry);
    clearTimeout(this.lostTimer);
    this.open = false;
    try {
      this.socket?.close(1000, "worker stopped");
    } catch {
      // already closed
    }
  }

  private connect(opened?: (ok: boolean) => void): void {
    const { url, headers } = this.client.sessionAddress(this.queue, { id: this.id, timeout_s: this.timeoutS });
    let socket: SessionSocket;
    try {
      socket = this.factory(url, headers);
    } catch (error) {
      if (opened) {
        this.log(`worker session unavailable (${(error as Error).message}): heart-beating leases instead`);
        opened(false);
      } else {
        // A reconnect that could not even start (the network gone): tried again, as a refused one is.
        this.closed(1006, (error as Error).message, false);
      }
      return;
    }
    this.socket = socket;
    let hello = false;
    socket.addEventListener("message", (event: { data: unknown }) => {
      const message = readSessionMessage(String(event.data));
      if (hello) {
        if (message?.type === "check") this.onCheck();
        return;
      }
      if (message?.type !== "session") return;
      hello = true;
      this.helloed(message);
      opened?.(true);
    });
    socket.addEventListener("close", (event: { code: number; reason: string }) => {
      if (socket !== this.socket) return;
      if (!hello && opened) {
        // The first connect failed (no WebSocket through a proxy, an old server): no session for this worker.
        this.log(`worker session unavailable (${event.code} ${event.reason}): heart-beating leases instead`);
        this.stopped = true;
        opened(false);
        return;
      }
      this.closed(event.code, event.reason, hello);
    });
    // An error is followed by a close; the close decides.
    socket.addEventListener("error", () => undefined);
  }

  private helloed(hello: SessionHelloMessage): void {
    this.id = hello.id;
    this.leaseS = hello.lease_s;
    this.open = true;
    this.failures = 0;
    this.downSince = null;
    clearTimeout(this.lostTimer);
    this.pinger = setInterval(() => this.ping(), (this.timeoutS * 1000) / 3);
  }

  private ping(): void {
    try {
      this.socket?.send(SESSION_PING);
    } catch {
      // closing: the close event reconnects
    }
  }

  private closed(code: number, reason: string, wasOpen: boolean): void {
    this.open = false;
    clearInterval(this.pinger);
    if (this.stopped) return;
    // 4000: the server ended the session (no ping for its timeout) and lapsed its leases.
    if (code === 4000) this.lost(reason);
    else if (wasOpen && this.downSince === null) {
      this.downSince = Date.now();
      // Not back within the timeout: the server lapses the leases; the worker hears it now, not at the reconnect.
      this.lostTimer = setTimeout(() => this.lost("the session stayed closed for its timeout"), this.timeoutS * 1000);
    }
    const delay = Math.min(RECONNECT_MIN_MS * 2 ** this.failures++, (this.timeoutS * 1000) / 3);
    this.retry = setTimeout(() => this.connect(), delay);
  }

  private lost(why: string): void {
    clearTimeout(this.lostTimer);
    this.log(`worker session ${this.id ?? ""} ended (${why}): its leases lapsed`);
    this.onLost();
  }
}
