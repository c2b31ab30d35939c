import { OpenAPIHono } from "@hono/zod-openapi";
import { toTaskView } from "../../engine/task-row";
import { ackTask } from "../../operations/ack";
import { heartbeatAnswer, singleAckAnswer } from "../../operations/answers";
import { cancel, heartbeat, readTask, retry } from "../../operations/task";
import type { AppEnv } from "../app-env";
import { validationHook } from "../validation";
import { authRoute, jsonBody, jsonResponse } from "../route-helpers";
import {
  ReleaseBody,
  CompleteBody,
  FailBody,
  HeartbeatBody,
  OutcomeResponse,
  TaskParams,
  TaskSchema,
} from "../../contracts/api";
import { z } from "@hono/zod-openapi";

const getTaskRoute = authRoute({
  method: "get",
  path: "/v1/tasks/{id}",
  tags: ["tasks"],
  summary: "A task with its payload, result, error history and progress",
  request: { params: TaskParams },
  responses: { 200: jsonResponse(TaskSchema) },
});

const completeRoute = authRoute({
  method: "post",
  path: "/v1/tasks/{id}/complete",
  tags: ["leases"],
  summary: "Complete a leased task (fenced by its lease token)",
  request: { params: TaskParams, body: jsonBody(CompleteBody) },
  responses: { 200: jsonResponse(OutcomeResponse) },
});

const failRoute = authRoute({
  method: "post",
  path: "/v1/tasks/{id}/fail",
  tags: ["leases"],
  summary: "Fail a leased task: retry after backoff or retry_after_s, or dead when permanent or exhausted",
  request: { params: TaskParams, body: jsonBody(FailBody) },
  responses: { 200: jsonResponse(OutcomeResponse) },
});

const heartbeatRoute = authRoute({
  method: "post",
  path: "/v1/tasks/{id}/heartbeat",
  tags: ["leases"],
  summary: "Extend a lease and report progress; 409 task_cancelled tells the holder to stop",
  request: { params: TaskParams, body: jsonBody(HeartbeatBody) },
  responses: {
    200: jsonResponse(
      z.object({
        id: z.string(),
        lease_expires_at: z.string(),
        progress: z.number().int().nullable(),
        progress_message: z.string().nullable(),
      }),
    ),
  },
});

const cancelRoute = authRoute({
  method: "post",
  path: "/v1/tasks/{id}/cancel",
  tags: ["tasks"],
  summary: "Cancel a pending task, or request cancellation of a processing one",
  request: { params: TaskParams },
  responses: { 200: jsonResponse(TaskSchema) },
});

const retryRoute = authRoute({
  method: "post",
  path: "/v1/tasks/{id}/retry",
  tags: ["tasks"],
  summary: "Retry a dead or cancelled task now, with attempts reset",
  request: { params: TaskParams },
  responses: { 200: jsonResponse(TaskSchema) },
});

const releaseRoute = authRoute({
  method: "post",
  path: "/v1/tasks/{id}/release",
  tags: ["leases"],
  summary: "Hand a leased task back unfinished: pending at once, the attempt not counted",
  request: { params: TaskParams, body: jsonBody(ReleaseBody) },
  responses: { 200: jsonResponse(OutcomeResponse) },
});

/** Routes addressed by task id. */
export const taskRoutes = new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
  .openapi(getTaskRoute, async (c) => c.json(toTaskView(await readTask(c.var.op, c.req.valid("param").id)), 200))
  .openapi(completeRoute, async (c) => {
    const { id } = c.req.valid("param");
    const body = c.req.valid("json");
    const outcome = await ackTask(c.var.op, "complete", { id, leaseToken: body.lease_token, result: body.result });
    return c.json(singleAckAnswer(outcome), 200);
  })
  .openapi(failRoute, async (c) => {
    const { id } = c.req.valid("param");
    const body = c.req.valid("json");
    const outcome = await ackTask(c.var.op, "fail", {
      id,
      leaseToken: body.lease_token,
      message: body.error,
      retryable: body.retryable,
      retryAfterS: body.retry_after_s,
    });
    return c.json(singleAckAnswer(outcome), 200);
  })
  .openapi(heartbeatRoute, async (c) => {
    const { id } = c.req.valid("param");
    const body = c.req.valid("json");
    const row = await heartbeat(c.var.op, {
      id,
      leaseToken: body.lease_token,
      extendS: body.extend_s,
      progress: body.progress,
      progressMessage: body.message,
      checkpoint: body.checkpoint,
    });
    return c.json(heartbeatAnswer(row, c.var.now), 200);
  })
  .openapi(releaseRoute, async (c) => {
    const { id } = c.req.valid("param");
    const outcome = await ackTask(c.var.op, "release", { id, leaseToken: c.req.valid("json").lease_token });
    return c.json(singleAckAnswer(outcome), 200);
  })
  .openapi(cancelRoute, async (c) => c.json(toTaskView(await cancel(c.var.op, c.req.valid("param").id)), 200))
  .openapi(retryRoute, async (c) => c.json(toTaskView(await retry(c.var.op, c.req.valid("param").id)), 200));
