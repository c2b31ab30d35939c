import { DurableObject } from "cloudflare:workers";
import {
  eventsPublishRowsSchema,
  type EventHubRpc,
  type EventRow,
  type EventsPublishRows,
  type HubAnswer,
} from "../protocols/durable-objects";
import { EVENT_COUNTS_INTERVAL_MS, EVENT_QUIET_MARGIN_MS, EVENT_QUIET_MS, EVENT_SEQ_BLOCK } from "../contracts/limits";
import { toIso } from "../contracts/time";
import { queueStatsOf } from "../shards/queue-ops";
import { readRoute, routeShards } from "../shards/queue-route";
import type { Env } from "../env";
import { EventBuffer } from "./event-buffer";
import {
  eventsPublishSchema,
  ungroupEvents,
  type CountsEvent,
  type EventsPublish,
  type StreamMessage,
  type TaskEvent,
  type TaskEventKind,
} from "../contracts/events";
import { EVENTS_PROTOCOL } from "../contracts/events-protocol";

/** Storage key of the highest event seq this queue's hub may hand out (EVENT_SEQ_BLOCK past the last one it
 * reserved): a hub starting again starts from it, so it never reuses a seq a client saw. */
const SEQ_KEY = "events:seq";

/** Storage key, true while publishers may be skipping this queue's events: a publish was answered "nobody
 * listens" and no listener joined since (src/effects/quiet-hubs.ts). Stored, once per quiet spell, so an
 * evicted hub still makes its next listener wait for the skips to run out. */
const SKIPPED_KEY = "events:skipped";

/** What each socket remembers across hibernation (serializeAttachment, at most 2 KB). */
interface SocketAttachment {
  /** Only this task's events (GET /v1/tasks/{id}/events); absent: the whole queue. */
  task?: string;
}

function lastError(errors: string): string | null {
  const list = JSON.parse(errors) as Array<{ message: string }>;
  return list.at(-1)?.message ?? null;
}

/**
 * EVENT_HUB: one Durable Object per queue, carrying its event stream — the WebSockets (held by the runtime
 * through the hibernation API, so an idle socket costs no duration), the per-queue seq, the resume buffer
 * and the counts snapshots. Every publish comes after the D1 write it reports committed; the effects owner
 * (src/effects/) and the queue's coordinators (their own leases) are its only publishers.
 *
 * @example
 * await env.EVENT_HUB.get(env.EVENT_HUB.idFromName("emails")).publish({ queue: "emails", events: groupEvents(events) });
 */
export class EventHub extends DurableObject<Env> implements EventHubRpc {
  private seq: number | undefined;
  /** The highest seq reserved in storage (SEQ_KEY); a seq above it is reserved before a client sees it. */
  private reserved = 0;
  private readonly buffer = new EventBuffer();
  /** Serialises publishes so seqs follow the order the hub was told. */
  private publishing: Promise<void> = Promise.resolve();
  private lastCountsAt = -Infinity;
  private countsTimer: ReturnType<typeof setTimeout> | undefined;
  /** Upgrades being answered: a listener joining counts as listening from its first moment. */
  private joining = 0;
  /** Whether publishers may be skipping this queue's events (SKIPPED_KEY); undefined until read. */
  private skipped: boolean | undefined;
  /** When (Date.now()) every isolate's skip has run out, for listeners joining a quiet queue. */
  private joinReadyAt = 0;
  /** The time every decision here is made at; tests replace it (fake timers reach no Durable Object). */
  now: () => number = () => Date.now();

  /** WebSocket upgrades for the queue's events, forwarded by src/http/routes/events.ts once authorised. */
  override async fetch(request: Request): Promise<Response> {
    const queue = new URL(request.url).searchParams.get("queue");
    if (request.headers.get("Upgrade") !== "websocket" || !queue) return new Response(null, { status: 426 });
    return this.accept(request, queue);
  }

  override webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): void {
    // "ping" is answered, anything else ignored (the stream is server-push only).
    if (message === "ping") ws.send("pong");
  }

  override webSocketClose(ws: WebSocket, code: number, reason: string): void {
    try {
      ws.close(code, reason);
    } catch {
      // already closed (the runtime may have answered the close itself)
    }
  }

  /**
   * Answers an upgrade: accepts the socket for hibernation, says where the stream stands, then replays
   * what a resuming client missed (`?after=SEQ`) or tells it to resync.
   *
   * A listener joining a queue nobody listened to may find publishers skipping its events
   * (src/effects/quiet-hubs.ts): from its first moment here every publish is answered "listening", and
   * its hello waits until every skip told before it has run out (EVENT_QUIET_MS and a margin), so it
   * misses nothing after its hello. The skipped events never took a seq: the seq moves on by one, so a
   * client resuming from before them is told to resync rather than told it missed nothing.
   */
  private async accept(request: Request, queue: string): Promise<Response> {
    this.joining++;
    try {
      await this.joinQuiet();
      return await this.acceptNow(request, queue);
    } finally {
      this.joining--;
    }
  }

  /** Waits, for a listener joining while publishers may be skipping, until they no longer are. */
  private async joinQuiet(): Promise<void> {
    if (this.ctx.getWebSockets().length > 0) return;
    this.skipped ??= (await this.ctx.storage.get<boolean>(SKIPPED_KEY)) ?? false;
    if (this.skipped) {
      this.skipped = false;
      await this.enqueue(async () => {
        this.seq = (await this.currentSeq()) + 1;
        this.buffer.clear();
        await this.reserve(this.seq, { [SKIPPED_KEY]: false });
      });
      // Real time, not `now`: the publishers' skips run on their real clocks.
      this.joinReadyAt = Date.now() + EVENT_QUIET_MS + EVENT_QUIET_MARGIN_MS;
    }
    const wait = this.joinReadyAt - Date.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
  }

  /** Whether anyone hears this queue's events: a socket connected, or one joining. "No" is remembered
   * first (the publisher will skip from its answer on). */
  private async answer(): Promise<HubAnswer> {
    const listening = this.joining > 0 || this.ctx.getWebSockets().length > 0;
    if (!listening && this.skipped !== true) {
      this.skipped = true;
      await this.ctx.storage.put(SKIPPED_KEY, true);
    }
    return { listening };
  }

  private async acceptNow(request: Request, queue: string): Promise<Response> {
    const url = new URL(request.url);
    const task = url.searchParams.get("task") ?? undefined;
    const afterParam = url.searchParams.get("after");
    const pair = new WebSocketPair();
    const [client, server] = [pair[0], pair[1]];
    this.ctx.acceptWebSocket(server, [task === undefined ? "queue" : "task"]);
    server.serializeAttachment({ task } satisfies SocketAttachment);
    const current = await this.currentSeq();
    // A seq a client sees is reserved first, so an eviction never hands it out again.
    await this.reserve(current);
    server.send(JSON.stringify({ event: "hello", queue, seq: current } satisfies StreamMessage));
    if (afterParam !== null) {
      const after = Number(afterParam);
      const missed = this.buffer.since(after, current);
      if ("resync" in missed) {
        server.send(JSON.stringify({ event: "resync", queue, after, seq: current } satisfies StreamMessage));
      } else {
        for (const e of missed.events) if (task === undefined || e.task_id === task) server.send(JSON.stringify(e));
      }
    }
    const offered = (request.headers.get("Sec-WebSocket-Protocol") ?? "").split(",").map((p) => p.trim());
    const headers = offered.includes(EVENTS_PROTOCOL) ? { "Sec-WebSocket-Protocol": EVENTS_PROTOCOL } : undefined;
    return new Response(null, { status: 101, webSocket: client, headers });
  }

  /**
   * Publishes events the effects owner reported: one D1 read fills in each task as it is now. Answers
   * whether anyone listens, once the events are through (see `accept`).
   */
  async publish(input: EventsPublish): Promise<HubAnswer> {
    const { queue, events: groups } = eventsPublishSchema.parse(input);
    const events = ungroupEvents(groups);
    if (events.length === 0) {
      await this.publishing;
      return this.answer();
    }
    await this.enqueue(async () => {
      await this.currentSeq();
      if (this.unheard(events.length)) return;
      const ids = [...new Set(events.map((e) => e.id))];
      const route = await readRoute(this.env, queue);
      const perShard = await Promise.all(routeShards(route).map((shard) => shard.store.readTaskEventFields(ids)));
      const rows = perShard.flat();
      const byId = new Map(rows.map((r) => [r.id, r]));
      await this.emit(
        queue,
        events.flatMap((e) => {
          const row = byId.get(e.id);
          return row ? [{ kind: e.kind, row }] : []; // purged meanwhile: nothing left to describe
        }),
      );
    });
    return this.answer();
  }

  /**
   * Publishes events for rows a coordinator itself just wrote (its own leases), with what an event shows
   * of each: no D1 read needed. Answers as `publish` does.
   */
  async publishRows(input: EventsPublishRows): Promise<HubAnswer> {
    const { queue, kind, rows } = eventsPublishRowsSchema.parse(input);
    if (rows.length > 0) {
      await this.enqueue(() =>
        this.emit(
          queue,
          rows.map((row) => ({ kind, row })),
        ),
      );
    }
    return this.answer();
  }

  private enqueue(work: () => Promise<void>): Promise<void> {
    const next = this.publishing.then(work);
    // The chain goes on after a failure; the caller still sees its own error.
    this.publishing = next.catch(() => undefined);
    return next;
  }

  /** The last seq handed out; a hub starting again starts from the reserved mark (SEQ_KEY), skipping the
   * seqs its previous run reserved and may not have used. */
  private async currentSeq(): Promise<number> {
    if (this.seq === undefined) {
      const stored = (await this.ctx.storage.get<number>(SEQ_KEY)) ?? 0;
      this.seq ??= stored;
      this.reserved = Math.max(this.reserved, stored);
    }
    return this.seq;
  }

  /**
   * With no socket connected nobody can hear events: they only take their seqs (in memory — no D1 read, no
   * storage write, the largest cost of a publish in the burn-down profile) and the resume buffer is
   * cleared, so a client resuming from before the gap gets "resync" and re-reads over HTTP. A seq is
   * reserved only when a client is shown it (`reserve`): an evicted object restarting from the reserved
   * mark reuses only seqs no client saw.
   */
  private unheard(count: number): boolean {
    if (this.ctx.getWebSockets().length > 0 || this.seq === undefined) return false;
    this.seq += count;
    this.buffer.clear();
    return true;
  }

  /**
   * Makes sure storage holds a mark at or above `seq` before a client is shown it: nothing to write while
   * `seq` is within the block reserved last (EVENT_SEQ_BLOCK), else one write reserving the next block,
   * with `also` (which always writes). The mark in memory moves before the write, so two callers never
   * both write, and Durable Object storage applies puts in call order, so the stored mark never goes back.
   */
  private async reserve(seq: number, also: Record<string, unknown> = {}): Promise<void> {
    const reserving = seq > this.reserved;
    if (!reserving && Object.keys(also).length === 0) return;
    if (reserving) this.reserved = seq + EVENT_SEQ_BLOCK;
    await this.ctx.storage.put({ ...also, [SEQ_KEY]: this.reserved });
  }

  private async emit(queue: string, items: Array<{ kind: TaskEventKind; row: EventRow }>): Promise<void> {
    if (items.length === 0) return;
    let seq = await this.currentSeq();
    if (this.unheard(items.length)) return;
    const at = toIso(this.now());
    const events: TaskEvent[] = items.map(({ kind, row }) => ({
      event: kind,
      seq: ++seq,
      queue,
      task_id: row.id,
      type: row.type,
      group: row.group_key,
      state: row.state,
      attempt: row.attempts,
      at,
      progress: row.progress,
      message: row.progress_message,
      error: kind === "failed" || kind === "dead" ? lastError(row.errors) : null,
      retry_at: kind === "failed" && row.state === "pending" ? toIso(row.run_at) : null,
    }));
    this.seq = seq;
    // A storage row only when the seqs pass the reserved block: one per EVENT_SEQ_BLOCK events.
    await this.reserve(seq);
    for (const e of events) this.buffer.append(e);
    for (const ws of this.ctx.getWebSockets()) {
      const { task } = (ws.deserializeAttachment() ?? {}) as SocketAttachment;
      for (const e of events) if (task === undefined || e.task_id === task) send(ws, e);
    }
    this.scheduleCounts(queue);
  }

  /** Sends a counts snapshot now, or once EVENT_COUNTS_INTERVAL_MS has passed since the last one. */
  private scheduleCounts(queue: string): void {
    if (this.ctx.getWebSockets("queue").length === 0 || this.countsTimer !== undefined) return;
    const wait = Math.max(0, this.lastCountsAt + EVENT_COUNTS_INTERVAL_MS - this.now());
    this.countsTimer = setTimeout(() => {
      this.countsTimer = undefined;
      this.lastCountsAt = this.now();
      this.sendCounts(queue).catch((error: unknown) => console.error("events: counts snapshot failed", error));
    }, wait);
  }

  private async sendCounts(queue: string): Promise<void> {
    const stats = await queueStatsOf(await readRoute(this.env, queue, { replica: true }), {}, this.now());
    const seq = await this.currentSeq();
    await this.reserve(seq);
    const message: CountsEvent = {
      event: "counts",
      queue,
      seq,
      counts: stats.counts,
      due: stats.due,
      oldest_due_at: toIso(stats.oldest_due_at),
      at: toIso(this.now()),
    };
    for (const ws of this.ctx.getWebSockets("queue")) send(ws, message);
  }
}

/** Sends, ignoring a socket that closed meanwhile (its close event cleans up). */
function send(ws: WebSocket, message: StreamMessage): void {
  try {
    ws.send(JSON.stringify(message));
  } catch {
    // closed or closing: nothing to deliver to
  }
}
