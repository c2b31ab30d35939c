import type { Hook, RouteConfig, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { invalidInput, JsonText, type ApiOperation, type Input } from "../operations/api/define";
import type { AppEnv } from "./app-env";
import { errorResponse } from "./error-handler";
import { authRoute, jsonBody, jsonResponse } from "./route-helpers";
import { validationHook } from "./validation";

/** What an HTTP route says of itself beside its operation: where it is and how the document describes it. */
type RouteDoc = Omit<RouteConfig, "request" | "responses"> & { tags: string[]; summary: string };

type Nothing = Record<never, never>;

/** The route's request parts, from the operation's params and input. */
type RequestOf<P, In> = (P extends z.ZodObject ? { params: P } : Nothing) &
  (In extends { from: "json"; schema: infer S extends z.ZodType }
    ? { body: { required: true; content: { "application/json": { schema: S } } } }
    : In extends { from: "query"; schema: infer S extends z.ZodObject }
      ? { query: S }
      : Nothing);

function requestOf<P extends z.ZodObject | undefined, In extends Input | undefined>(
  operation: ApiOperation<P, In, z.ZodType, unknown>,
): RequestOf<P, In> {
  const { params, input } = operation;
  return {
    ...(params === undefined ? {} : { params }),
    ...(input?.from === "json" ? { body: jsonBody(input.schema) } : {}),
    ...(input?.from === "query" ? { query: input.schema } : {}),
  } as RequestOf<P, In>;
}

/**
 * A refused part of the request answered as the operation's RPC method answers it (`invalidInput`). Typed
 * `never` to fit any route's hook slot: it answers only errors, never a route's typed success.
 */
function hookOf(operation: ApiOperation): never {
  const { input } = operation;
  if (input?.meant === undefined) return validationHook as never;
  const hook: Hook<unknown, AppEnv, string, unknown> = (result, c) => {
    if (result.success || result.target !== input.from) return validationHook(result, c);
    // @hono/zod-validator hands the hook the input as `data`, also when validation failed.
    const value = (result as { data?: unknown }).data;
    return errorResponse(c, invalidInput(input, value, result.error, result.target));
  };
  return hook as never;
}

/** Sends an answer: JSON text as it is (a lease's tasks, rendered by SQLite), anything else as `c.json`. */
function send(c: Context, answer: unknown, status: 200 | 201): Response {
  if (answer instanceof JsonText) return c.body(answer.text, status, { "Content-Type": "application/json" });
  return c.json(answer, status);
}

/**
 * The Hono route of an operation (src/operations/api/): its request schemas and answer from the operation,
 * where it is from `doc`, every error response from the error table (`authRoute`); the handler runs the
 * operation with the parsed values and sends its answer. Spread into `app.openapi(…)`.
 *
 * @example
 * app.openapi(...operationRoute(taskApi.fail, { method: "post", path: "/v1/tasks/{id}/fail", tags, summary }));
 */
export function operationRoute<
  const D extends RouteDoc,
  P extends z.ZodObject | undefined,
  In extends Input | undefined,
  Answer extends z.ZodType,
  A,
  const S extends 200 | 201 = 200,
>(operation: ApiOperation<P, In, Answer, A>, doc: D, created?: { status: S; description: string }) {
  const status = created?.status ?? 200;
  const route = authRoute({
    ...doc,
    request: requestOf(operation),
    responses: { [status]: jsonResponse(operation.answer, created?.description) } as {
      [K in S]: ReturnType<typeof jsonResponse<Answer>>;
    },
  });
  // Typed `never`, so that Hono takes the route's path and input types from the route alone; the answer's
  // type was checked against the route's schema where the operation was defined (defineOperation).
  const handler = (async (c: Context<AppEnv>) => {
    const params = operation.params === undefined ? undefined : c.req.valid("param" as never);
    const input = operation.input === undefined ? undefined : c.req.valid(operation.input.from as never);
    return send(c, await operation.run(c.var.op, params as never, input as never), status);
  }) as never;
  return [route, handler, hookOf(operation)] as const;
}
