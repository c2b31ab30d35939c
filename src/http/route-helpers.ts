import type { z } from "@hono/zod-openapi";
import { ErrorSchema } from "./schemas";

const errorContent = { "application/json": { schema: ErrorSchema } };

/** The error responses every authenticated route documents. */
export const errorResponses = {
  400: { description: "invalid_request: a field is missing or malformed; the message names it", content: errorContent },
  401: { description: "unauthorized: missing or wrong bearer token", content: errorContent },
  404: { description: "not_found", content: errorContent },
  409: { description: "lease_lost, invalid_transition, task_cancelled or dedupe_conflict", content: errorContent },
  413: { description: "payload_too_large: over the documented limit", content: errorContent },
  415: { description: "unsupported_media_type: send Content-Type: application/json", content: errorContent },
  429: { description: "rate_limited: retry after Retry-After", content: errorContent },
  500: { description: "internal: an unexpected error (details are logged, never returned)", content: errorContent },
  503: { description: "not_configured: production without EDGEQ_TOKEN", content: errorContent },
} as const;

/** A required JSON request body. */
export function jsonBody<T extends z.ZodType>(schema: T) {
  return { required: true, content: { "application/json": { schema } } } as const;
}

/** A JSON response. */
export function jsonResponse<T extends z.ZodType>(schema: T, description = "OK") {
  return { description, content: { "application/json": { schema } } } as const;
}

/** Bearer auth, as the OpenAPI document declares it. */
export const bearer = [{ Bearer: [] }];
