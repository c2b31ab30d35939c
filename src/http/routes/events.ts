import * as z from "zod";
import { createRoute, ApiRoutes } from "../api-routes";
import { component } from "../../contracts/component";
import type { Context } from "hono";
import { EdgeqError } from "../../contracts/errors";
import { EVENT_BUFFER_SIZE, EVENT_QUIET_MARGIN_MS, EVENT_QUIET_MS, EVENT_TICKET_TTL_S } from "../../contracts/limits";
import { acceptedTokens, readSettings } from "../../env";
import { EVENTS_PROTOCOL, TICKET_PROTOCOL_PREFIX } from "../../contracts/events-protocol";
import { issueTicket, ticketProblem } from "../../events/tickets";
import { countsEventSchema, helloEventSchema, resyncEventSchema, taskEventSchema } from "../../contracts/events";
import { onTaskShard } from "../../shards/task-locator";
import type { AppEnv } from "../app-env";
import { isAcceptedToken, presentedToken } from "../auth";
import { authRoute, errorResponses, jsonResponse } from "../route-helpers";
import { QueueParams, TaskParams, TicketResponse } from "../../contracts/api";
import { validationHook } from "../validation";

const StreamQuery = z.object({
  after: z.coerce
    .number()
    .int()
    .min(0)
    .optional()
    .meta({ description: "Resume: replay the events after this seq (or get a `resync` event)" }),
  ticket: z.string().optional().meta({ description: "A ticket from POST /v1/events/tickets" }),
});

/** What the socket sends, named in the OpenAPI document: each WebSocket text message is one of these. */
const StreamMessages = z
  .union([
    taskEventSchema.meta(component("TaskEvent")),
    countsEventSchema.meta(component("CountsEvent")),
    helloEventSchema.meta(component("HelloEvent")),
    resyncEventSchema.meta(component("ResyncEvent")),
  ])
  .meta(component("StreamMessage"));

const upgradeResponses = {
  101: {
    description:
      "Switching Protocols: the WebSocket. Its every text message is a StreamMessage (hello, a TaskEvent, counts or resync; #/components/schemas/StreamMessage)",
  },
  ...errorResponses,
};

const STREAM_DESCRIPTION = `A WebSocket upgrade (send \`Upgrade: websocket\`; anything else is 400). Browsers cannot set Authorization on a WebSocket, so besides a bearer token the upgrade takes a ticket from POST /v1/events/tickets (valid ${EVENT_TICKET_TTL_S} s), as \`?ticket=\` or as the subprotocol \`edgeq.ticket.<ticket>\` offered next to \`${EVENTS_PROTOCOL}\` (which the answer then selects); a missing, wrong or expired one is refused with 401 before the upgrade. The socket then carries JSON text messages: first \`hello\` (where the stream stands), then task events (enqueued, leased, progress, completed, failed with the error and \`retry_at\`, dead, cancelled, expired, released, redriven), each with a per-queue \`seq\`, and a \`counts\` snapshot at most once a second while anything changes. Reconnect with \`?after=<last seq>\` to get what was missed from the last ${EVENT_BUFFER_SIZE} events, or a \`resync\` event when the gap is older or nobody listened meanwhile (re-read over HTTP, then follow from its \`seq\`). The first listener of a queue nobody listened to waits about ${(EVENT_QUIET_MS + EVENT_QUIET_MARGIN_MS) / 1000} s for its \`hello\`: publishers that skipped its events meanwhile must have stopped skipping; everything after the \`hello\` reaches it.`;

/** Bearer or ticket: either one opens a stream. */
const bearerOrTicket: Array<Record<string, string[]>> = [{ Bearer: [] }, { Ticket: [] }];

const queueEventsRoute = createRoute({
  method: "get",
  path: "/v1/queues/{queue}/events",
  tags: ["events"],
  summary: "A WebSocket of the queue's task events and counts (auth: ?ticket=, subprotocol or bearer)",
  description: STREAM_DESCRIPTION,
  security: bearerOrTicket,
  request: { params: QueueParams, query: StreamQuery },
  responses: upgradeResponses,
});

const taskEventsRoute = createRoute({
  method: "get",
  path: "/v1/tasks/{id}/events",
  tags: ["events"],
  summary: "A WebSocket of one task's events (served by its queue's event hub)",
  description: STREAM_DESCRIPTION,
  security: bearerOrTicket,
  request: { params: TaskParams, query: StreamQuery },
  responses: upgradeResponses,
});

const ticketRoute = authRoute({
  method: "post",
  path: "/v1/events/tickets",
  tags: ["events"],
  summary: "A short-lived signed ticket for the events WebSocket (browsers cannot send Authorization there)",
  description: `Signed with the bearer token this request presents, valid ${EVENT_TICKET_TTL_S} s: open GET /v1/queues/{queue}/events or GET /v1/tasks/{id}/events with \`?ticket=\` or the subprotocol \`edgeq.ticket.<ticket>\`. The token itself never goes into a URL.`,
  responses: {
    200: jsonResponse(TicketResponse),
  },
});

/** The tokens this Worker accepts (acceptedTokens, as requireBearer), or the error to refuse with. */
function tokensOrRefuse(c: Context<AppEnv>): string[] {
  const tokens = acceptedTokens(readSettings(c.env));
  if (tokens.length === 0) {
    throw new EdgeqError("not_configured", "EDGEQ_TOKEN is not set; refusing to serve without authentication");
  }
  return [...tokens];
}

/** Refuses the upgrade (before it happens) unless a good ticket or bearer token came with it. */
async function authorize(c: Context<AppEnv>, queryTicket: string | undefined): Promise<void> {
  const tokens = tokensOrRefuse(c);
  if (isAcceptedToken(tokens, presentedToken(c))) return;
  const offered = (c.req.header("Sec-WebSocket-Protocol") ?? "").split(",").map((p) => p.trim());
  const ticket =
    queryTicket ?? offered.find((p) => p.startsWith(TICKET_PROTOCOL_PREFIX))?.slice(TICKET_PROTOCOL_PREFIX.length);
  if (ticket === undefined) {
    throw new EdgeqError(
      "unauthorized",
      `ticket: send ?ticket=<ticket> or the subprotocol ${TICKET_PROTOCOL_PREFIX}<ticket> (POST /v1/events/tickets), or Authorization: Bearer <EDGEQ_TOKEN>`,
    );
  }
  const problem = await ticketProblem(ticket, tokens, Date.now());
  if (problem !== null) throw new EdgeqError("unauthorized", `ticket: ${problem}`);
}

/** Hands an authorised upgrade to the queue's coordinator, which accepts the socket. */
function forward(c: Context<AppEnv>, queue: string, task: string | undefined, after: number | undefined) {
  if (c.req.header("Upgrade")?.toLowerCase() !== "websocket") {
    throw new EdgeqError("invalid_request", "this endpoint is a WebSocket: send Upgrade: websocket");
  }
  const url = new URL("https://event-hub/events");
  url.searchParams.set("queue", queue);
  if (task !== undefined) url.searchParams.set("task", task);
  if (after !== undefined) url.searchParams.set("after", String(after));
  const headers = new Headers({ Upgrade: "websocket" });
  const offered = c.req.header("Sec-WebSocket-Protocol");
  if (offered?.split(",").some((p) => p.trim() === EVENTS_PROTOCOL))
    headers.set("Sec-WebSocket-Protocol", EVENTS_PROTOCOL);
  const hub = c.env.EVENT_HUB.get(c.env.EVENT_HUB.idFromName(queue));
  return hub.fetch(new Request(url, { headers }));
}

/**
 * The event streams. Mounted ahead of /v1's bearer middleware: a browser's WebSocket cannot send
 * Authorization, so these authorise by ticket themselves (and still accept a bearer token).
 */
export const eventStreamRoutes = new ApiRoutes<AppEnv>({ defaultHook: validationHook })
  .openapi(queueEventsRoute, async (c) => {
    const { queue } = c.req.valid("param");
    const { after, ticket } = c.req.valid("query");
    await authorize(c, ticket);
    return forward(c, queue, undefined, after);
  })
  .openapi(taskEventsRoute, async (c) => {
    const { id } = c.req.valid("param");
    const { after, ticket } = c.req.valid("query");
    await authorize(c, ticket);
    const task = await onTaskShard(c.env, id, (shard) => shard.store.getTask(id));
    return forward(c, task.queue, task.id, after);
  });

// The messages' shapes, in the document's components (a 101 has no body to hang them on).
eventStreamRoutes.openAPIRegistry.register("StreamMessage", StreamMessages);

/** Tickets, behind the bearer token like the rest of /v1. */
export const ticketRoutes = new ApiRoutes<AppEnv>({ defaultHook: validationHook }).openapi(ticketRoute, async (c) => {
  const { ticket, expiresAt } = await issueTicket(presentedToken(c) ?? "", c.var.now);
  return c.json({ ticket, expires_at: new Date(expiresAt).toISOString() }, 200);
});
