import type { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "./app-env";

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

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
}

/**
 * A self-contained docs page rendered from the OpenAPI document (no external scripts, so it works
 * offline and under a strict CSP): every route with its summary, grouped by tag.
 */
export function renderDocsPage(app: OpenAPIHono<AppEnv>): string {
  const doc = app.getOpenAPI31Document(OPENAPI_INFO);
  const rows: string[] = [];
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const [method, op] of Object.entries(item ?? {})) {
      if (typeof op !== "object" || op === null || !("responses" in op)) continue;
      const summary = "summary" in op && typeof op.summary === "string" ? op.summary : "";
      const tags = "tags" in op && Array.isArray(op.tags) ? op.tags.join(", ") : "";
      rows.push(
        `<tr><td>${escapeHtml(tags)}</td><td><code>${method.toUpperCase()}</code></td><td><code>${escapeHtml(path)}</code></td><td>${escapeHtml(summary)}</td></tr>`,
      );
    }
  }
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>edgeq API</title>
<style>body{font:15px/1.5 system-ui,sans-serif;max-width:70rem;margin:2rem auto;padding:0 1rem}table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.4rem;text-align:left;vertical-align:top}code{font-size:13px}</style>
</head><body><h1>edgeq API</h1><p>${escapeHtml(OPENAPI_INFO.info.description)}</p>
<p>Machine-readable: <a href="/openapi.json">/openapi.json</a> (OpenAPI 3.1).</p>
<table><thead><tr><th>Tag</th><th>Method</th><th>Path</th><th>What it does</th></tr></thead><tbody>${rows.join("")}</tbody></table></body></html>`;
}
