import { ApiRoutes } from "../api-routes";
import { taskApi } from "../../operations/api/task-api";
import type { AppEnv } from "../app-env";
import { operationRoute } from "../operation-route";
import { validationHook } from "../validation";

/** Routes addressed by task id: each the HTTP face of one operation of src/operations/api/task-api.ts. */
export const taskRoutes = new ApiRoutes<AppEnv>({ defaultHook: validationHook })
  .openapi(
    ...operationRoute(taskApi.dependencies, {
      method: "get",
      path: "/v1/tasks/{id}/dependencies",
      tags: ["tasks"],
      summary: "A page of a task's dependencies, each with its state and result (inline up to 16 KiB)",
    }),
  )
  .openapi(
    ...operationRoute(taskApi.dependents, {
      method: "get",
      path: "/v1/tasks/{id}/dependents",
      tags: ["tasks"],
      summary: "A page of the tasks that depend on a task",
    }),
  )
  .openapi(
    ...operationRoute(taskApi.get, {
      method: "get",
      path: "/v1/tasks/{id}",
      tags: ["tasks"],
      summary: "A task with its payload, result, error history and progress",
    }),
  )
  .openapi(
    ...operationRoute(taskApi.complete, {
      method: "post",
      path: "/v1/tasks/{id}/complete",
      tags: ["leases"],
      summary: "Complete a leased task (fenced by its lease token)",
    }),
  )
  .openapi(
    ...operationRoute(taskApi.fail, {
      method: "post",
      path: "/v1/tasks/{id}/fail",
      tags: ["leases"],
      summary: "Fail a leased task: retry after backoff or retry_after_s, or dead when permanent or exhausted",
    }),
  )
  .openapi(
    ...operationRoute(taskApi.heartbeat, {
      method: "post",
      path: "/v1/tasks/{id}/heartbeat",
      tags: ["leases"],
      summary: "Extend a lease and report progress; 409 task_cancelled tells the holder to stop",
    }),
  )
  .openapi(
    ...operationRoute(taskApi.release, {
      method: "post",
      path: "/v1/tasks/{id}/release",
      tags: ["leases"],
      summary: "Hand a leased task back unfinished: pending at once, the attempt not counted",
    }),
  )
  .openapi(
    ...operationRoute(taskApi.cancel, {
      method: "post",
      path: "/v1/tasks/{id}/cancel",
      tags: ["tasks"],
      summary: "Cancel a pending task, or request cancellation of a processing one",
    }),
  )
  .openapi(
    ...operationRoute(taskApi.retry, {
      method: "post",
      path: "/v1/tasks/{id}/retry",
      tags: ["tasks"],
      summary: "Retry a dead or cancelled task now, with attempts reset",
    }),
  )
  .openapi(
    ...operationRoute(taskApi.wait, {
      method: "get",
      path: "/v1/tasks/{id}/wait",
      tags: ["tasks"],
      summary: "Wait (up to timeout_s) for a task to finish; answers its view and whether it is finished",
    }),
  );
