import { OpenAPIHono, z } from "@hono/zod-openapi";
import { saveSchedule, setSchedulePaused, triggerScheduleNow } from "../../operations/schedule";
import { scheduleView } from "../../schedules/schedule-service";
import {
  ScheduleBody,
  ScheduleListResponse,
  ScheduleParams,
  ScheduleView,
  TriggerResponse,
} from "../../schedules/schedule-schemas";
import { deleteSchedule, getSchedule, listSchedules } from "../../schedules/schedule-store";
import { shardedTaskStore } from "../../shards/task-store";
import type { AppEnv } from "../app-env";
import { authRoute, jsonBody, jsonResponse } from "../route-helpers";
import { validationHook } from "../validation";

const tags = ["schedules"];

const putRoute = authRoute({
  method: "put",
  path: "/v1/schedules/{name}",
  tags,
  summary: "Create or replace a schedule: a task enqueued into a queue at every slot of a cron expression",
  request: { params: ScheduleParams, body: jsonBody(ScheduleBody) },
  responses: { 200: jsonResponse(ScheduleView) },
});

const getRoute = authRoute({
  method: "get",
  path: "/v1/schedules/{name}",
  tags,
  summary: "A schedule with its next 5 fire times and its last run's task and state",
  request: { params: ScheduleParams },
  responses: { 200: jsonResponse(ScheduleView) },
});

const listRoute = authRoute({
  method: "get",
  path: "/v1/schedules",
  tags,
  summary: "Every schedule, by name",
  responses: { 200: jsonResponse(ScheduleListResponse) },
});

const deleteRoute = authRoute({
  method: "delete",
  path: "/v1/schedules/{name}",
  tags,
  summary: "Delete a schedule (the tasks it enqueued stay)",
  request: { params: ScheduleParams },
  responses: { 200: jsonResponse(z.object({ deleted: z.string() })) },
});

const pauseRoute = authRoute({
  method: "post",
  path: "/v1/schedules/{name}/pause",
  tags,
  summary: "Pause a schedule: no slot fires until it is resumed",
  request: { params: ScheduleParams },
  responses: { 200: jsonResponse(ScheduleView) },
});

const resumeRoute = authRoute({
  method: "post",
  path: "/v1/schedules/{name}/resume",
  tags,
  summary: "Resume a schedule from its first slot after now (missed slots are not fired)",
  request: { params: ScheduleParams },
  responses: { 200: jsonResponse(ScheduleView) },
});

const triggerRoute = authRoute({
  method: "post",
  path: "/v1/schedules/{name}/trigger",
  tags,
  summary: "Run a schedule now: enqueue its task once, outside its slots",
  request: { params: ScheduleParams },
  responses: { 200: jsonResponse(TriggerResponse) },
});

export const scheduleRoutes = new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
  .openapi(putRoute, async (c) => {
    const row = await saveSchedule(c.var.op, c.req.valid("param").name, c.req.valid("json"));
    return c.json(await scheduleView(c.var.db, row, c.var.now, shardedTaskStore(c.env)), 200);
  })
  .openapi(getRoute, async (c) => {
    const row = await getSchedule(c.var.db, c.req.valid("param").name);
    return c.json(await scheduleView(c.var.db, row, c.var.now, shardedTaskStore(c.env)), 200);
  })
  .openapi(listRoute, async (c) => {
    const rows = await listSchedules(c.var.db);
    return c.json(
      { schedules: await Promise.all(rows.map((r) => scheduleView(c.var.db, r, c.var.now, shardedTaskStore(c.env)))) },
      200,
    );
  })
  .openapi(deleteRoute, async (c) => {
    const { name } = c.req.valid("param");
    await deleteSchedule(c.var.db, name);
    return c.json({ deleted: name }, 200);
  })
  .openapi(pauseRoute, async (c) => {
    const row = await setSchedulePaused(c.var.op, c.req.valid("param").name, true);
    return c.json(await scheduleView(c.var.db, row, c.var.now, shardedTaskStore(c.env)), 200);
  })
  .openapi(resumeRoute, async (c) => {
    const row = await setSchedulePaused(c.var.op, c.req.valid("param").name, false);
    return c.json(await scheduleView(c.var.db, row, c.var.now, shardedTaskStore(c.env)), 200);
  })
  .openapi(triggerRoute, async (c) => {
    const { name } = c.req.valid("param");
    const { id, deduplicated } = await triggerScheduleNow(c.var.op, name);
    return c.json({ name, task: { id, deduplicated } }, 200);
  });
