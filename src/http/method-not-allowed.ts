import type { Context } from "hono";
import type { RouterRoute } from "hono/types";
import { EdgeqError } from "../contracts/errors";
import { errorResponse } from "./error-handler";

/** A route's path pattern (`/v1/tasks/:id/artifacts/:name`) as a regular expression over request paths. */
function pathPattern(path: string): RegExp {
  const source = path
    .split("/")
    .map((segment) =>
      segment.startsWith(":") ? "[^/]+" : segment === "*" ? ".*" : segment.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"),
    )
    .join("/");
  return new RegExp(`^${source}$`);
}

/**
 * The methods `path` is served with, from the app's own routes (middleware, registered for every method,
 * does not count). HEAD is listed with GET: Hono answers it from the GET handler.
 *
 * @example
 * allowedMethods(app.routes, "/v1/queues/emails/tasks"); // ["GET", "HEAD", "POST"]
 */
export function allowedMethods(routes: readonly RouterRoute[], path: string): string[] {
  const methods = new Set<string>();
  for (const route of routes) {
    if (route.method === "ALL" || !pathPattern(route.path).test(path)) continue;
    methods.add(route.method);
    if (route.method === "GET") methods.add("HEAD");
  }
  return [...methods].sort();
}

/**
 * The app's not-found handler: a path served with other methods answers 405 `method_not_allowed` with an
 * `Allow` header (RFC 9110 §15.5.6), so a client can tell a wrong method from a wrong path; any other
 * path is 404 `not_found`.
 */
export function notFound(app: { routes: readonly RouterRoute[] }) {
  return (c: Context): Response => {
    const allowed = allowedMethods(app.routes, c.req.path);
    if (allowed.length > 0) {
      const message = `${c.req.method} is not allowed on ${c.req.path}; it takes ${allowed.join(", ")}`;
      return errorResponse(c, new EdgeqError("method_not_allowed", message), { Allow: allowed.join(", ") });
    }
    return errorResponse(c, new EdgeqError("not_found", `no route for ${c.req.method} ${c.req.path}`));
  };
}
