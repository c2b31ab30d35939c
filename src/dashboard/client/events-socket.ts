import { EVENTS_PROTOCOL, TICKET_PROTOCOL_PREFIX } from "../../contracts/events-protocol";
import { api } from "./api";
import { markLive } from "./dom";
import type { PageLife } from "./page-life";
import type { StreamMessage, Ticket } from "./wire";

/** How long a dropped socket waits before reconnecting: a server restarting (wrangler dev reloading) is
 * not asked again at once, and the page is live again within seconds. */
const RECONNECT_MS = 2_000;

type Followed = Exclude<StreamMessage, { event: "hello" } | { event: "resync" }>;

/**
 * Follows an events stream for as long as `life`'s page is shown: task events and counts go to
 * `onEvent`; `onResync` runs when the page should re-read what it shows (once the stream is live — what
 * changed between the page's first reads and then — and when the server says events were missed). A
 * dropped socket reconnects with `?after=` the last seq seen.
 */
export function follow(
  life: PageLife,
  path: string,
  handlers: { onEvent: (event: Followed) => void; onResync?: () => void },
): void {
  let seq: number | null = null;
  const connect = async (): Promise<void> => {
    const ticket = await api<Ticket>("POST", "/v1/events/tickets", { body: {}, signal: life.signal });
    if (!ticket.ok) return; // the 401 handler or the notice of the page's own reads says why
    life.check();
    const url = new URL(path, location.href);
    url.protocol = location.protocol === "https:" ? "wss:" : "ws:";
    if (seq !== null) url.searchParams.set("after", String(seq));
    const ws = new WebSocket(url, [EVENTS_PROTOCOL, TICKET_PROTOCOL_PREFIX + ticket.body.ticket]);
    const forget = life.onEnd(() => close(ws));
    ws.onmessage = (message: MessageEvent<string>) => {
      if (life.ended) return;
      const event = JSON.parse(message.data) as StreamMessage;
      if (event.event === "hello") {
        markLive(true);
        if (seq === null) {
          seq = event.seq;
          handlers.onResync?.();
        }
        return;
      }
      if (event.event === "resync") {
        seq = event.seq;
        handlers.onResync?.();
        return;
      }
      if (event.event !== "counts") seq = Math.max(seq ?? 0, event.seq);
      handlers.onEvent(event);
    };
    ws.onclose = () => {
      forget();
      if (life.ended) return;
      markLive(false);
      life.later(RECONNECT_MS, connect);
    };
  };
  life.run(connect);
}

/** Closes a socket of a page that was left. One still connecting is closed as soon as it opens: closing
 * it earlier makes the browser log an error ("closed before the connection is established"). */
function close(ws: WebSocket): void {
  ws.onmessage = null;
  ws.onclose = null;
  if (ws.readyState === WebSocket.CONNECTING) ws.onopen = () => ws.close(1000);
  else ws.close(1000);
}
