import { ApiRoutes } from "../api-routes";
import { scheduleApi } from "../../operations/api/schedule-api";
import type { AppEnv } from "../app-env";
import { operationRoute } from "../operation-route";
import { validationHook } from "../validation";

const tags = ["schedules"];

/** Routes of schedules: each the HTTP face of one operation of src/operations/api/schedule-api.ts. */
export const scheduleRoutes = new ApiRoutes<AppEnv>({ defaultHook: validationHook })
  .openapi(
    ...operationRoute(scheduleApi.put, {
      method: "put",
      path: "/v1/schedules/{name}",
      tags,
      summary: "Create or replace a schedule: a task enqueued into a queue at every slot of a cron expression",
    }),
  )
  .openapi(
    ...operationRoute(scheduleApi.get, {
      method: "get",
      path: "/v1/schedules/{name}",
      tags,
      summary: "A schedule with its next 5 fire times and its last run's task and state",
    }),
  )
  .openapi(
    ...operationRoute(scheduleApi.all, {
      method: "get",
      path: "/v1/schedules",
      tags,
      summary: "Every schedule, by name",
    }),
  )
  .openapi(
    ...operationRoute(scheduleApi.delete, {
      method: "delete",
      path: "/v1/schedules/{name}",
      tags,
      summary: "Delete a schedule (the tasks it enqueued stay)",
    }),
  )
  .openapi(
    ...operationRoute(scheduleApi.pause, {
      method: "post",
      path: "/v1/schedules/{name}/pause",
      tags,
      summary: "Pause a schedule: no slot fires until it is resumed",
    }),
  )
  .openapi(
    ...operationRoute(scheduleApi.resume, {
      method: "post",
      path: "/v1/schedules/{name}/resume",
      tags,
      summary: "Resume a schedule from its first slot after now (missed slots are not fired)",
    }),
  )
  .openapi(
    ...operationRoute(scheduleApi.trigger, {
      method: "post",
      path: "/v1/schedules/{name}/trigger",
      tags,
      summary: "Run a schedule now: enqueue its task once, outside its slots",
    }),
  );
