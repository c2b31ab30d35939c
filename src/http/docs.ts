import { renderReferencePage, type ReferenceDocument } from "./reference/reference-page";

/** The OpenAPI document's header. */
export const OPENAPI_INFO = {
  openapi: "3.1.0",
  info: {
    title: "edgeq",
    version: "0.1.0",
    description:
      'A durable task queue on Cloudflare\'s edge. Every route but /health, /openapi.json and /docs requires `Authorization: Bearer <EDGEQ_TOKEN>`. Errors are `{ "error": { "code", "message" } }`; a method a path does not take is 405 `method_not_allowed` with an `Allow` header.',
  },
} as const;

/**
 * The API reference at /docs (src/http/reference/), rendered once per isolate from the OpenAPI document:
 * schemas expanded, examples, try-it. Its only script is inline, so it works offline and under a CSP
 * that allows nothing but this origin.
 */
const rendered = new WeakMap<object, string>();
export function renderDocsPage(document: object): string {
  let page = rendered.get(document);
  if (page === undefined) {
    page = renderReferencePage(document as ReferenceDocument);
    rendered.set(document, page);
  }
  return page;
}

/** The reference page's policy: its inline script and style, requests to this origin only. */
export const DOCS_CSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'";
