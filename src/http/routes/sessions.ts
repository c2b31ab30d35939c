import { ApiRoutes } from "../api-routes";
import { EdgeqError } from "../../contracts/errors";
import { QueueParams } from "../../contracts/api";
import { component } from "../../contracts/component";
import {
  MAX_SESSION_TIMEOUT_S,
  MIN_SESSION_TIMEOUT_S,
  SESSION_LEASE_S,
  SessionCheck,
  SessionHello,
  SessionQuery,
} from "../../contracts/session";
import * as z from "zod";
import type { AppEnv } from "../app-env";
import { authRoute, errorResponses } from "../route-helpers";
import { validationHook } from "../validation";

const SESSION_DESCRIPTION = `A WebSocket upgrade (send \`Upgrade: websocket\`; anything else is 400) that keeps a worker's leases instead of heartbeats. The first message is \`{"type":"session","id","timeout_s","lease_s"}\`. Send \`lease\` (or an ack's \`lease\`) with \`session: <id>\`: those leases are written ${SESSION_LEASE_S} s long once, and kept by the socket — send the text \`ping\` every third of \`timeout_s\` (answered \`pong\` by the runtime: no D1 write, no Worker request). When the socket has had no ping for \`timeout_s\`, or has been closed that long without a reconnect with \`?id=<id>\`, every lease of the session lapses at once (redelivered as an expired lease is; your later acks are \`lease_lost\`). A task running longer than half of \`lease_s\` is extended by its worker (POST /v1/queues/{queue}/extend). When a cancel is requested of a task a session holds, every session of the queue gets \`{"type":"check"}\`: extend your leases now, and the cancelled one answers \`task_cancelled\`. \`timeout_s\`: ${MIN_SESSION_TIMEOUT_S} to ${MAX_SESSION_TIMEOUT_S}.`;

const sessionRoute = authRoute({
  method: "get",
  path: "/v1/queues/{queue}/session",
  tags: ["leases"],
  summary: "A worker session: a WebSocket that keeps the worker's leases alive and lapses them when it ends",
  description: SESSION_DESCRIPTION,
  request: { params: QueueParams, query: SessionQuery },
  responses: {
    101: {
      description:
        "Switching Protocols: the session's WebSocket. Its text messages are SessionMessages (#/components/schemas/SessionMessage): first a `session` hello, later a `check` when a cancel was requested of a task some session holds (extend your leases now: that one answers `task_cancelled`); each `ping` sent is answered with the text `pong`",
    },
    ...errorResponses,
  },
});

const SessionMessages = z
  .union([SessionHello.meta(component("SessionHello")), SessionCheck.meta(component("SessionCheck"))])
  .meta(component("SessionMessage"));

/** Worker sessions: the upgrade, authorised by the bearer token like the rest of /v1, handed to the queue's
 * partition-0 coordinator, which accepts the socket (src/coordinator/sessions.ts). */
export const sessionRoutes = new ApiRoutes<AppEnv>({ defaultHook: validationHook }).openapi(sessionRoute, (c) => {
  const { queue } = c.req.valid("param");
  const { id, timeout_s } = c.req.valid("query");
  if (c.req.header("Upgrade")?.toLowerCase() !== "websocket") {
    throw new EdgeqError("invalid_request", "this endpoint is a WebSocket: send Upgrade: websocket");
  }
  const url = new URL("https://coordinator/session");
  url.searchParams.set("queue", queue);
  url.searchParams.set("timeout_s", String(timeout_s));
  if (id !== undefined) url.searchParams.set("id", id);
  // Partition 0's coordinator: the one named by the queue itself (`coordinatorName`, src/effects/wake.ts).
  const coordinator = c.env.COORDINATOR.get(c.env.COORDINATOR.idFromName(queue));
  return coordinator.fetch(new Request(url, { headers: { Upgrade: "websocket" } }));
});

// The first message's shape, in the document's components (a 101 has no body to hang it on).
sessionRoutes.openAPIRegistry.register("SessionMessage", SessionMessages);
