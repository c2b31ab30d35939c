import { expectOk, type Client } from "../client";
import type { CliConfig } from "../config";

/**
 * The events WebSocket (GET /v1/queues/{q}/events, /v1/tasks/{id}/events) as a wake-up signal for
 * `edgeq watch`: each message wakes the watch, which then re-reads the authoritative view over HTTP.
 * Node 22 has a global WebSocket; where none exists (Node 20) or the server refuses, `open` returns null
 * and the watch polls instead. After a drop it reconnects with `?after=SEQ`.
 *
 * @example
 * const stream = await EventSignal.open(ctx.config, ctx.client, `/v1/queues/emails/events`);
 * await stream?.next(10_000); // an event arrived, or 10 s passed
 */
export class EventSignal {
  private seq = 0;
  private pending = false;
  private wake?: () => void;
  private socket: WebSocket | undefined;
  private closed = false;

  private constructor(
    private readonly config: CliConfig,
    private readonly client: Client,
    private readonly path: string,
  ) {}

  /** Connects, or returns null when this Node has no WebSocket or the server does not accept one. */
  static async open(config: CliConfig, client: Client, path: string): Promise<EventSignal | null> {
    if (typeof globalThis.WebSocket !== "function") return null;
    const signal = new EventSignal(config, client, path);
    return (await signal.connect()) ? signal : null;
  }

  /** Whether the socket is up (a watch polls at its own interval while it is not). */
  get live(): boolean {
    return this.socket?.readyState === WebSocket.OPEN;
  }

  /** Resolves when an event arrived since the last call, or after `ms`. */
  next(ms: number): Promise<void> {
    if (this.pending) {
      this.pending = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wake = undefined;
        this.pending = false;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wake = done;
    });
  }

  close(): void {
    this.closed = true;
    this.wake?.(); // no timer left to keep the process alive
    this.socket?.close(1000, "watch ended");
  }

  private async connect(): Promise<boolean> {
    let ticket: string;
    try {
      ticket = (await expectOk(await this.client.v1.events.tickets.$post())).ticket;
    } catch {
      return false; // an older server without events: poll
    }
    const url = new URL(this.path, this.config.url);
    url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
    url.searchParams.set("ticket", ticket);
    if (this.seq > 0) url.searchParams.set("after", String(this.seq));
    const socket = new WebSocket(url.toString());
    const opened = await new Promise<boolean>((resolve) => {
      socket.addEventListener("open", () => resolve(true), { once: true });
      socket.addEventListener("error", () => resolve(false), { once: true });
    });
    if (!opened) return false;
    this.socket = socket;
    socket.addEventListener("message", (event) => {
      const message = JSON.parse(String(event.data)) as { event: string; seq?: number };
      if (message.event !== "counts" && typeof message.seq === "number") this.seq = Math.max(this.seq, message.seq);
      this.pending = true;
      this.wake?.();
    });
    socket.addEventListener("close", () => {
      this.wake?.();
      if (!this.closed) void this.reconnectLater();
    });
    return true;
  }

  /** One reconnect attempt a second later; meanwhile (and if it fails) the watch polls. */
  private async reconnectLater(): Promise<void> {
    await new Promise((r) => setTimeout(r, 1000));
    if (!this.closed) await this.connect().catch(() => false);
  }
}
