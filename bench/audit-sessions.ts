/**
 * Section 12's worker-session run: workers that hold their leases through a worker session
 * (`GET /v1/queues/{q}/session`, src/coordinator/sessions.ts) — 300 s leases that lapse when the session ends —
 * and whose sessions end at random: a socket cut, a worker gone silent, a socket dropped and resumed, a worker
 * that goes on working after its socket was cut. The ledger checks the same three guarantees as the other runs.
 */
import type { WebSocket } from "ws";
import { SESSION_PING } from "../src/contracts/session-wire";
import { AuditWorker, type AuditApi, type LeasedTask } from "./audit-client";
import { finish, random, sleep, startSoak, type AuditRun, type SoakShape } from "./audit-runs";
import { AUDIT_HOST, AUDIT_TOKEN } from "./audit-worker";
import type { WorkerdBench } from "./workerd-host";

/** Longest the drain may take: a lapsed session's leases are back within its timeout, an alarm and a backoff. */
const DRAIN_CAP_S = 60;

/** One worker session as the audit drives it: its socket, its id, its pings (five to a timeout). */
class AuditSession {
  private pinger: ReturnType<typeof setInterval> | undefined;
  /** Node's clock when the last ping was sent (the coordinator sees the session alive until then). */
  lastPingAt = Date.now();

  private constructor(
    readonly id: string,
    private readonly socket: WebSocket,
    readonly timeoutMs: number,
  ) {
    this.pinger = setInterval(() => this.ping(), timeoutMs / 5);
  }

  /** Opens a session of `queue` (resumes `id` when given) and waits for its hello. */
  static async open(bench: WorkerdBench, queue: string, timeoutS: number, id?: string): Promise<AuditSession> {
    const query = new URLSearchParams({ timeout_s: String(timeoutS), ...(id === undefined ? {} : { id }) });
    const { status, socket } = await bench.socket(
      `https://${AUDIT_HOST}/v1/queues/${encodeURIComponent(queue)}/session?${query}`,
      { Authorization: `Bearer ${AUDIT_TOKEN}` },
    );
    if (socket === null) throw new Error(`audit: the session of ${queue} was refused: ${status}`);
    const hello = await new Promise<{ type: string; id: string }>((resolve, reject) => {
      socket.addEventListener("message", (event) => resolve(JSON.parse(String(event.data)) as never), { once: true });
      socket.addEventListener("close", (event) => reject(new Error(`audit: session closed ${event.code}`)));
    });
    if (hello.type !== "session" || (id !== undefined && hello.id !== id)) {
      throw new Error(`audit: unexpected session hello ${JSON.stringify(hello)}`);
    }
    return new AuditSession(hello.id, socket, timeoutS * 1000);
  }

  private ping(): void {
    try {
      this.socket.send(SESSION_PING);
      this.lastPingAt = Date.now();
    } catch {
      this.silence();
    }
  }

  /**
   * Whether the server closed the socket (the coordinator's 4000: no ping for its timeout) within `ms`. Read from
   * the socket's state, which leaves OPEN when the server's close frame arrives: the `close` event waits for the
   * connection's end, which local workerd may hold for `ws`'s 30 s close timeout.
   */
  async closedByServer(ms: number): Promise<boolean> {
    const until = Date.now() + ms;
    while (this.socket.readyState === this.socket.OPEN) {
      if (Date.now() > until) return false;
      await sleep(100);
    }
    return true;
  }

  /** Stops pinging, the socket left open (a hung worker). Returns the last ping's time. */
  silence(): number {
    clearInterval(this.pinger);
    this.pinger = undefined;
    return this.lastPingAt;
  }

  /** Stops pinging and closes the socket (a worker gone, a network cut). Returns when. */
  cut(): number {
    this.silence();
    try {
      this.socket.close(1001, "audit: cut");
    } catch {
      // already closed
    }
    return Date.now();
  }
}

/**
 * `workers` workers, each leasing `batch` under its own worker session (`timeoutS`), with the cron tick every
 * `tickMs`; of a batch leased: 10 % its socket cut and the batch abandoned (the session's leases may end
 * `timeoutS` after the cut, not before); 7 % its worker silent, the socket open, until the coordinator closes it
 * (4000) — its acks after that must be refused; 7 % its socket dropped and resumed with the session's id, then
 * the batch completed (the leases kept: a refusal would be of a live holder); 6 % its socket cut, the worker
 * working on past the session's timeout, then acking (accepted only if no one else was handed the task); the
 * rest completed. Until every task ended or `capS` passed; then a drain by session workers that no longer crash.
 */
export async function sessionSoak(
  bench: WorkerdBench,
  api: AuditApi,
  opts: SoakShape & { queue: string; timeoutS: number },
): Promise<AuditRun> {
  const { tasks, ledger, ended, started, deadline, stopTicking, track } = await startSoak(bench, api, opts);
  const timeoutMs = opts.timeoutS * 1000;
  let crashes = 0;
  const tokens = (held: LeasedTask[]) => held.map((t) => t.lease_token);
  const sessions: AuditSession[] = [];
  const open = async (id?: string) => {
    const session = await AuditSession.open(bench, opts.queue, opts.timeoutS, id);
    sessions.push(session);
    return session;
  };
  try {
    await Promise.all(
      Array.from({ length: opts.workers }, async (_, w) => {
        const rand = random(2_000 + w);
        const worker = new AuditWorker(api, ledger, opts.queue, `session-${w}`);
        let session = await open();
        while (ended.size < tasks.size && Date.now() < deadline) {
          const held = await worker.sessionLease(opts.batch, session.id);
          if (held.length === 0) {
            await sleep(200);
            continue;
          }
          const roll = rand();
          if (roll < 0.1) {
            crashes += 1; // the socket cut, the batch abandoned
            ledger.endFrom(tokens(held), session.cut() + timeoutMs);
            session = await open();
          } else if (roll < 0.17) {
            crashes += 1; // silent with its socket open: the coordinator ends the session (4000)
            ledger.endFrom(tokens(held), session.silence() + timeoutMs);
            if (!(await session.closedByServer(4 * timeoutMs))) {
              throw new Error(`audit: a silent session was not closed within ${(4 * timeoutMs) / 1000} s`);
            }
            await worker.ack(held, [], true);
            session = await open();
          } else if (roll < 0.24) {
            crashes += 1; // the socket dropped, resumed with the session's id: its leases are kept
            session.cut();
            session = await open(session.id);
            (await worker.ack(held)).forEach((ok, i) => track(held[i]!, ok));
          } else if (roll < 0.3) {
            crashes += 1; // the socket cut, the worker working on past the session's timeout, then acking
            ledger.endFrom(tokens(held), session.cut() + timeoutMs);
            await sleep(timeoutMs + 1_000);
            (await worker.ack(held)).forEach((ok, i) => track(held[i]!, ok));
            session = await open();
          } else {
            (await worker.ack(held)).forEach((ok, i) => track(held[i]!, ok));
          }
        }
        session.cut();
      }),
    );
    // The drain: session workers that no longer crash take what is left (a lapsed session's leases come back
    // after its timeout, the coordinator's alarm and their 1 s backoff) until every task ended.
    const drainUntil = Date.now() + DRAIN_CAP_S * 1000;
    await Promise.all(
      Array.from({ length: opts.workers }, async (_, w) => {
        const worker = new AuditWorker(api, ledger, opts.queue, `session-drain-${w}`);
        const session = await open();
        while (ended.size < tasks.size && Date.now() < drainUntil) {
          const held = await worker.sessionLease(opts.batch, session.id);
          if (held.length === 0) await sleep(200);
          else (await worker.ack(held)).forEach((ok, i) => track(held[i]!, ok));
        }
        session.cut();
      }),
    );
  } finally {
    for (const session of sessions) session.cut();
    await stopTicking();
  }
  return finish(api, opts.queue, tasks, ledger, started, "worker sessions", crashes);
}
