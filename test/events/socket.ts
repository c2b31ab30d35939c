import { exports } from "cloudflare:workers";
import { expect } from "vitest";
import type { StreamMessage } from "../../src/contracts/events";
import { call, ORIGIN, TOKEN } from "../http/api";

/** How long a test waits for an event before failing: events ride on waitUntil, so they arrive soon after
 * the response; this only bounds a failure. */
const EVENT_WAIT_MS = 5_000;

/** A ticket from the API, as a browser would get one. */
export async function ticket(): Promise<string> {
  const res = await call<{ ticket: string; expires_at: string }>("POST", "/v1/events/tickets");
  expect(res.status, res.text).toBe(200);
  return res.body.ticket;
}

/** An open events socket and everything it received, in order. */
export interface Stream {
  messages: StreamMessage[];
  /** Resolves with the first message (from `from` on) that matches, waiting for it to arrive. */
  next(match: (m: StreamMessage) => boolean, from?: number): Promise<StreamMessage>;
  /** Waits until `n` task events arrived and returns them. */
  taskEvents(n: number): Promise<StreamMessage[]>;
  close(): void;
}

const isTaskEvent = (m: StreamMessage) => m.event !== "hello" && m.event !== "counts" && m.event !== "resync";

/** Opens `path` (with a fresh ticket unless one is in it) and collects its messages. */
export async function openStream(path: string, init: RequestInit = {}): Promise<Stream> {
  const url = new URL(path, ORIGIN);
  if (!url.searchParams.has("ticket")) url.searchParams.set("ticket", await ticket());
  const res = await exports.default.fetch(
    new Request(url, { ...init, headers: { Upgrade: "websocket", ...(init.headers as Record<string, string>) } }),
  );
  if (res.status !== 101) throw new Error(`upgrade refused: ${res.status} ${await res.text()}`);
  const ws = res.webSocket!;
  const messages: StreamMessage[] = [];
  const listeners = new Set<() => void>();
  ws.addEventListener("message", (e) => {
    messages.push(JSON.parse(e.data as string) as StreamMessage);
    for (const listener of listeners) listener();
  });
  ws.accept();
  const until = <T>(found: () => T | undefined, what: string) =>
    new Promise<T>((resolve, reject) => {
      const check = () => {
        const value = found();
        if (value === undefined) return;
        listeners.delete(check);
        clearTimeout(timer);
        resolve(value);
      };
      const timer = setTimeout(() => {
        listeners.delete(check);
        reject(new Error(`no ${what} within ${EVENT_WAIT_MS} ms; got ${JSON.stringify(messages)}`));
      }, EVENT_WAIT_MS);
      listeners.add(check);
      check();
    });
  return {
    messages,
    next: (match, from = 0) => until(() => messages.slice(from).find(match), "matching message"),
    taskEvents: (n) =>
      until(() => {
        const events = messages.filter(isTaskEvent);
        return events.length >= n ? events : undefined;
      }, `${n} task events`),
    close: () => ws.close(1000, "done"),
  };
}

export { TOKEN };
