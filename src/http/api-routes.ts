import type { createRoute as openApiCreateRoute, OpenAPIHono, RouteConfig } from "@hono/zod-openapi";
import { Hono, type Context, type MiddlewareHandler } from "hono";
import { HTTPException } from "hono/http-exception";
import { mergePath } from "hono/utils/url";
import { validator } from "hono/validator";
import type * as z from "zod";
import { validationHook } from "./validation";

/**
 * What the API's routes record of themselves for the OpenAPI document: each route as declared and each
 * component registered, in order. Only `edgeq/reference` (src/http/reference/mount.ts) turns them into the
 * document, with @hono/zod-openapi; the core Worker never imports it (its `z` is zod's whole namespace,
 * every locale included: about half of a Worker's bundle).
 */
export type RouteDefinition =
  | { type: "route"; route: RouteConfig }
  | { type: "component"; componentType: string; name: string; component: unknown }
  | { type: "schema"; name: string; schema: z.ZodType };

/** The definitions of an app (`openAPIRegistry.definitions`, the name @hono/zod-openapi gives them). */
class RouteRecord {
  readonly definitions: RouteDefinition[] = [];
  registerPath(route: RouteConfig): void {
    this.definitions.push({ type: "route", route });
  }
  registerComponent(componentType: string, name: string, component: unknown): void {
    this.definitions.push({ type: "component", componentType, name, component });
  }
  /** A schema the document lists among its components though no route names it. */
  register<S extends z.ZodType>(name: string, schema: S): S {
    this.definitions.push({ type: "schema", name, schema });
    return schema;
  }
}

type Target = "query" | "param" | "header" | "json";
type AnyHook = (
  result: { success: boolean; data?: unknown; error?: unknown; target: Target },
  c: Context,
) => Response | void | Promise<Response | void>;

/** The request's schema for one target, validated as @hono/zod-validator does (headers case-insensitive). */
function validate(target: Target, schema: z.ZodType, hook: AnyHook): MiddlewareHandler {
  const shape = target === "header" ? (schema as unknown as { shape: Record<string, unknown> }).shape : undefined;
  const keys = shape === undefined ? undefined : new Map(Object.keys(shape).map((key) => [key.toLowerCase(), key]));
  return validator(target, async (value, c) => {
    const input =
      keys === undefined
        ? value
        : Object.fromEntries(Object.entries(value).map(([key, v]) => [keys.get(key) ?? key, v]));
    const result = await schema.safeParseAsync(input);
    const answered = await hook({ data: input, ...result, target }, c);
    if (answered instanceof Response) return answered;
    if (!result.success) return c.json(result, 400);
    return result.data;
  });
}

const isJson = (mediaType: string) => /^application\/([a-z-.]+\+)?json/i.test(mediaType);
const JSON_REQUEST = /^application\/([a-z-.]+\+)?json(;\s*[a-zA-Z0-9-]+=([^;]+))*$/i;

/** Whether a request without a Content-Type carries a body: its first non-empty chunk, read from a copy. */
async function hasBody(c: Context): Promise<boolean> {
  const raw = c.req.raw;
  if (raw.body === null) return false;
  if (raw.bodyUsed) return (await c.req.arrayBuffer()).byteLength > 0;
  const reader = raw.clone().body!.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return false;
      if (value.byteLength > 0) return true;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}

/** A body of a declared JSON type only: any other Content-Type, or a body without one, is a 415. */
const jsonOnly: MiddlewareHandler = async (c, next) => {
  const contentType = c.req.header("content-type");
  const refused = contentType === undefined ? await hasBody(c) : !JSON_REQUEST.test(contentType);
  if (refused) throw new HTTPException(415, { message: "Unsupported Media Type" });
  await next();
};

/**
 * The API's Hono app: `openapi(route, handler, hook?)` registers a route declared with `createRoute`,
 * validating its params, query, headers and JSON body with the route's zod schemas (a refusal goes to the
 * hook, by default the 400 `invalid_request` of src/http/validation.ts), exactly as @hono/zod-openapi's
 * OpenAPIHono does, and records the route for the document (`openAPIRegistry.definitions`). Typed as
 * OpenAPIHono, so routes keep their typed inputs and the typed client (`hono/client`) its schema; the
 * document methods (`doc31`, `getOpenAPI31Document`) are `edgeq/reference`'s, not here.
 */
class ApiRoutesApp extends Hono {
  readonly openAPIRegistry = new RouteRecord();

  openapi = (
    { middleware, hide, ...route }: RouteConfig,
    handler: MiddlewareHandler,
    hook: AnyHook = validationHook as AnyHook,
  ) => {
    if (hide !== true) this.openAPIRegistry.registerPath(route as RouteConfig);
    const request = route.request;
    const checks: MiddlewareHandler[] = [];
    if (request?.query) checks.push(validate("query", request.query as z.ZodType, hook));
    if (request?.params) checks.push(validate("param", request.params as z.ZodType, hook));
    if (request?.headers) checks.push(validate("header", request.headers as z.ZodType, hook));
    const content = request?.body?.content ?? {};
    const json = Object.keys(content).find(isJson);
    if (json !== undefined) {
      checks.push(jsonOnly, validate("json", (content[json] as { schema: z.ZodType }).schema, hook));
    }
    const before = middleware === undefined ? [] : Array.isArray(middleware) ? middleware : [middleware];
    this.on([route.method], [route.path.replaceAll(/\/{(.+?)}/g, "/:$1")], ...before, ...checks, handler);
    return this;
  };

  constructor() {
    super();
    // `app.route(path, child)` also takes the child's definitions, under the path it is mounted at.
    const mount = this.route.bind(this);
    this.route = ((path: string, child: Hono) => {
      mount(path, child);
      if (!(child instanceof ApiRoutesApp)) return this;
      const prefix = path.replaceAll(/:([^/]+)/g, "{$1}");
      for (const definition of child.openAPIRegistry.definitions) {
        if (definition.type !== "route") this.openAPIRegistry.definitions.push(definition);
        else this.openAPIRegistry.registerPath({ ...definition.route, path: mergePath(prefix, definition.route.path) });
      }
      return this;
    }) as typeof this.route;
  }
}

/** The API's Hono app (see ApiRoutesApp), under the type of the class it stands in for. */
export const ApiRoutes = ApiRoutesApp as unknown as typeof OpenAPIHono;

/**
 * A route's declaration, as @hono/zod-openapi's `createRoute` makes it (the config, and its Hono path).
 *
 * @example
 * const route = createRoute({ method: "get", path: "/v1/tasks/{id}", responses: { 200: jsonResponse(TaskSchema) } });
 */
export const createRoute = ((config: RouteConfig) =>
  Object.defineProperty({ ...config }, "getRoutingPath", {
    enumerable: false,
    value: () => config.path.replaceAll(/\/{(.+?)}/g, "/:$1"),
  })) as typeof openApiCreateRoute;
