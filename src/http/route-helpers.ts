import type * as z from "zod";
import { createRoute } from "./api-routes";
import { ERRORS } from "../contracts/errors";
import { ErrorSchema } from "../contracts/api";

const errorContent = { "application/json": { schema: ErrorSchema } };

/** Every code but those no documented operation answers: a 405 is for a method the path does not document. */
const documented = ERRORS.filter((e) => e.code !== "method_not_allowed");
type DocumentedStatus = (typeof documented)[number]["status"];

/** The documented response of one error status: its codes and what each means, from the error table. */
function errorResponse(status: DocumentedStatus) {
  const description = documented
    .filter((e) => e.status === status)
    .map((e) => `\`${e.code}\`: ${e.description}`)
    .join(" · ");
  return { description, content: errorContent };
}

/**
 * The error responses every authenticated route documents: one per status of the error table
 * (src/contracts/errors.ts), each naming its codes, e.g. 409: "`lease_lost`: … · `task_cancelled`: …".
 * `satisfies` fails the build when a status of the table is missing here or one is listed that it lacks.
 */
export const errorResponses = {
  400: errorResponse(400),
  401: errorResponse(401),
  404: errorResponse(404),
  409: errorResponse(409),
  413: errorResponse(413),
  415: errorResponse(415),
  429: errorResponse(429),
  500: errorResponse(500),
  503: errorResponse(503),
} as const satisfies Record<DocumentedStatus, unknown>;

/** Bearer auth, as the OpenAPI document declares it. */
export const bearer = [{ Bearer: [] }];

/**
 * The one factory for an authenticated route: bearer security and every error response of the error table,
 * added to the route's own (success) responses.
 *
 * @example
 * const getTaskRoute = authRoute({
 *   method: "get",
 *   path: "/v1/tasks/{id}",
 *   tags: ["tasks"],
 *   summary: "A task",
 *   request: { params: TaskParams },
 *   responses: { 200: jsonResponse(TaskSchema) },
 * });
 */
export const authRoute = <const R extends Parameters<typeof createRoute>[0]>(r: R) =>
  createRoute({ ...r, security: bearer, responses: { ...r.responses, ...errorResponses } });

/** A required JSON request body. */
export function jsonBody<T extends z.ZodType>(schema: T) {
  return { required: true, content: { "application/json": { schema } } } as const;
}

/** A JSON response. */
export function jsonResponse<T extends z.ZodType>(schema: T, description = "OK") {
  return { description, content: { "application/json": { schema } } } as const;
}
