import { OpenAPIHono } from "@hono/zod-openapi";
import type { RouteDefinition } from "../api-routes";
import type { AppEnv } from "../app-env";
import { DOCS_CSP, OPENAPI_INFO, renderDocsPage } from "../docs";
import type { HttpPart } from "../http-part";

/** The document of the app's routes, built once by @hono/zod-openapi from what they recorded (api-routes.ts). */
function openApiDocument(app: OpenAPIHono<AppEnv>) {
  const doc = new OpenAPIHono();
  // What ApiRoutes recorded (the core's stand-in for OpenAPIHono's registry).
  for (const definition of app.openAPIRegistry.definitions as unknown as RouteDefinition[]) {
    if (definition.type === "route") doc.openAPIRegistry.registerPath(definition.route);
    else if (definition.type === "component") {
      const { componentType, name, component } = definition;
      doc.openAPIRegistry.registerComponent(componentType as "securitySchemes", name, component as never);
    } else {
      // The schema is named already (component(), src/contracts/component.ts); register() names it again with
      // `.openapi(name)`, which schemas built before @hono/zod-openapi patched zod do not have: hand it over as is.
      const { name, schema } = definition;
      doc.openAPIRegistry.register(name, { openapi: () => schema } as unknown as typeof schema);
    }
  }
  return doc.getOpenAPI31Document(OPENAPI_INFO);
}

/**
 * The API's OpenAPI 3.1 document at /openapi.json and its reference page at /docs (docs/api.md), as
 * `edgeq/reference`; both public. They bring @hono/zod-openapi and zod's whole namespace into the bundle:
 * pass it to createEdgeq to serve them.
 *
 * @example
 * import { createEdgeq } from "edgeq";
 * import { reference } from "edgeq/reference";
 * const edgeq = createEdgeq({ processors, reference });
 */
export const reference: HttpPart<"reference"> = {
  name: "reference",
  mount(app) {
    app.openAPIRegistry.registerComponent("securitySchemes", "Bearer", { type: "http", scheme: "bearer" });
    // The events WebSocket's alternative to the bearer token (src/http/routes/events.ts).
    app.openAPIRegistry.registerComponent("securitySchemes", "Ticket", { type: "apiKey", in: "query", name: "ticket" });
    let document: ReturnType<typeof openApiDocument> | undefined;
    const documented = () => (document ??= openApiDocument(app));
    app.get("/openapi.json", (c) => c.json(documented()));
    app.get("/docs", (c) => c.html(renderDocsPage(documented()), 200, { "Content-Security-Policy": DOCS_CSP }));
  },
};
