import { REFERENCE_CSS } from "./reference-style";
import { TRY_IT_JS } from "./try-it-script";
import { escapeHtml, exampleOf, proseHtml, schemaBlock, type Components, type Schema } from "./schema-view";

interface Parameter {
  name: string;
  in: string;
  required?: boolean;
  description?: string;
  schema?: Schema;
}
interface MediaType {
  schema?: Schema;
  example?: unknown;
}
interface Operation {
  tags?: string[];
  summary?: string;
  description?: string;
  security?: Array<Record<string, unknown>>;
  parameters?: Parameter[];
  requestBody?: { required?: boolean; content?: Record<string, MediaType> };
  responses?: Record<string, { description?: string; content?: Record<string, MediaType> }>;
}
/** The parts of the generated OpenAPI 3.1 document the reference reads. */
export interface ReferenceDocument {
  info: { title: string; version: string; description?: string };
  paths?: Record<string, Record<string, unknown>>;
  components?: { schemas?: Components };
}

const METHODS = ["get", "put", "post", "delete", "patch"];
const ERROR_REF = "#/components/schemas/Error";
/** The component a WebSocket's 101 names for its messages (`#/components/schemas/<name>` in its description:
 * StreamMessage for the events, src/http/routes/events.ts; SessionMessage for a worker session). */
const MESSAGES_REF = /#\/components\/schemas\/([A-Za-z]+)/;

/** An operation's anchor: `op-post-v1-queues-queue-lease`. */
export function operationId(method: string, path: string): string {
  return `op-${method}-${path.replace(/[^A-Za-z0-9]+/g, "-").replace(/^-|-$/g, "")}`;
}

function json(value: unknown): string {
  return escapeHtml(JSON.stringify(value, null, 2));
}

function paramsHtml(components: Components, params: Parameter[]): string {
  if (params.length === 0) return "";
  const rows = params.map((p) => {
    const example = p.schema ? exampleOf(components, p.schema, true, p.name) : "";
    return `<tr><td><code>${escapeHtml(p.name)}</code></td><td>${escapeHtml(p.in)}</td><td>${p.required ? "required" : "optional"}</td><td>${schemaBlock(components, p.schema ?? {})}${
      p.description ? `<p>${escapeHtml(p.description)}</p>` : ""
    }<p class="notes">e.g. <code>${escapeHtml(String(example))}</code></p></td></tr>`;
  });
  return `<h4>Parameters</h4><table class="params"><thead><tr><th>Name</th><th>In</th><th></th><th>Schema</th></tr></thead><tbody>${rows.join("")}</tbody></table>`;
}

/** The JSON example a request body starts from in the try-it form (null when it is not JSON). */
function bodyExample(components: Components, op: Operation): unknown {
  const media = op.requestBody?.content?.["application/json"];
  if (!media) return null;
  return media.example ?? (media.schema ? exampleOf(components, media.schema, false) : {});
}

function requestBodyHtml(components: Components, op: Operation): string {
  const content = op.requestBody?.content;
  if (!content) return "";
  const parts = Object.entries(content).map(([type, media]) => {
    const example =
      type === "application/json" ? `<h5>Example</h5><pre>${json(bodyExample(components, op))}</pre>` : "";
    return `<p class="notes">${escapeHtml(type)}${op.requestBody?.required ? ", required" : ""}</p>${schemaBlock(components, media.schema ?? {})}${example}`;
  });
  return `<h4>Request body</h4><div class="request-schema">${parts.join("")}</div>`;
}

function responsesHtml(components: Components, op: Operation): string {
  const entries = Object.entries(op.responses ?? {});
  const items = entries.map(([status, response]) => {
    const success = status.startsWith("1") || status.startsWith("2");
    const media = Object.entries(response.content ?? {});
    // Every error body is the one Error shape, shown once at the top (#errors) rather than under each status.
    const isError = media.length === 1 && media[0]![1].schema?.$ref === ERROR_REF;
    // A 101 has no body: what a WebSocket sends is its messages' schema, a named component.
    const named = status === "101" ? MESSAGES_REF.exec(response.description ?? "")?.[1] : undefined;
    const messages = named && components[named] ? { $ref: `#/components/schemas/${named}` } : null;
    const body = isError
      ? `<p class="notes">body: <a href="#errors">Error</a></p>`
      : messages
        ? `<h5>WebSocket messages</h5><div class="messages">${schemaBlock(components, messages)}</div>`
        : media
            .map(
              ([type, m]) =>
                `<p class="notes">${escapeHtml(type)}</p>${schemaBlock(components, m.schema ?? {})}${
                  type === "application/json" && m.schema
                    ? `<h5>Example</h5><pre>${json(m.example ?? exampleOf(components, m.schema, true))}</pre>`
                    : ""
                }`,
            )
            .join("");
    return `<details class="response"${success ? " open" : ""}><summary><span class="status s${escapeHtml(status[0] ?? "")}">${escapeHtml(status)}</span> ${proseHtml(response.description ?? "")}</summary>${body}</details>`;
  });
  return `<h4>Responses</h4>${items.join("")}`;
}

/** The try-it form: path and query inputs, the JSON body (prefilled with the example) and Send. */
function tryItHtml(components: Components, method: string, path: string, op: Operation): string {
  const id = operationId(method, path);
  if (op.responses?.["101"]) {
    // A socket a browser may open takes a ticket (the events); one with the bearer token only is a worker's.
    const how = op.security?.some((scheme) => "Ticket" in scheme)
      ? "open it with a ticket from POST /v1/events/tickets (see above), or follow it with <code>edgeq watch</code>"
      : "a worker holds it (the Node SDK's <code>Worker</code> does, docs/sdk.md)";
    return `<p class="notes websocket">A WebSocket, not a request this form can send: ${how}.</p>`;
  }
  const inputs = (op.parameters ?? [])
    .filter((p) => p.in === "path" || p.in === "query")
    .map((p) => {
      const value = p.in === "path" && p.schema ? String(exampleOf(components, p.schema, true, p.name)) : "";
      return `<label>${escapeHtml(p.name)} <span class="notes">(${p.in})</span> <input name="${escapeHtml(p.name)}" data-in="${p.in}" value="${escapeHtml(value)}"${p.required ? " required" : ""}></label>`;
    });
  const example = bodyExample(components, op);
  const body =
    example === null
      ? op.requestBody
        ? `<p class="notes">This body is raw bytes: send it with curl or the CLI.</p>`
        : ""
      : `<label class="body">Body (JSON) <textarea name="body" rows="${Math.min(12, JSON.stringify(example, null, 2).split("\n").length + 1)}">${json(example)}</textarea></label>`;
  const secured = (op.security ?? []).length > 0;
  return `<details class="try"><summary>Try it</summary><form class="try-it" data-method="${method.toUpperCase()}" data-path="${escapeHtml(path)}" data-auth="${secured ? "bearer" : "none"}" aria-label="Try ${method.toUpperCase()} ${escapeHtml(path)}">${inputs.join("")}${body}<button type="submit">Send ${method.toUpperCase()}</button><output for="${id}" class="result" aria-live="polite"></output></form></details>`;
}

function operationHtml(components: Components, method: string, path: string, op: Operation): string {
  const secured = (op.security ?? []).length > 0;
  return `<section class="op" id="${operationId(method, path)}"><h3><span class="method m-${method}">${method.toUpperCase()}</span> <code>${escapeHtml(path)}</code></h3>
<p>${proseHtml(op.summary ?? "")}</p>${op.description ? `<p class="long">${proseHtml(op.description)}</p>` : ""}
<p class="notes">${secured ? "Auth: <code>Authorization: Bearer &lt;token&gt;</code>" : "No auth"}</p>
${paramsHtml(components, op.parameters ?? [])}${requestBodyHtml(components, op)}${responsesHtml(components, op)}${tryItHtml(components, method, path, op)}</section>`;
}

/**
 * The API reference at /docs, rendered from the OpenAPI document: every operation grouped by tag with its
 * parameters, request and response schemas expanded, examples, and a try-it form that sends the token
 * kept in sessionStorage (the dashboard's key). Everything is in the page (no external script, font or
 * stylesheet), so it works offline and under a CSP that allows only this origin.
 *
 * @example
 * c.html(renderReferencePage(app.getOpenAPI31Document(OPENAPI_INFO)));
 */
export function renderReferencePage(doc: ReferenceDocument): string {
  const components = doc.components?.schemas ?? {};
  const byTag = new Map<string, string[]>();
  const nav = new Map<string, string[]>();
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const method of METHODS) {
      const op = item[method] as Operation | undefined;
      if (!op) continue;
      const tag = op.tags?.[0] ?? "other";
      byTag.set(tag, [...(byTag.get(tag) ?? []), operationHtml(components, method, path, op)]);
      nav.set(tag, [
        ...(nav.get(tag) ?? []),
        `<li><a href="#${operationId(method, path)}"><span class="method m-${method}">${method.toUpperCase()}</span> ${escapeHtml(path)}</a></li>`,
      ]);
    }
  }
  const navHtml = [...nav].map(([tag, links]) => `<h2>${escapeHtml(tag)}</h2><ul>${links.join("")}</ul>`).join("");
  const body = [...byTag]
    .map(
      ([tag, ops]) =>
        `<section class="tag" id="tag-${escapeHtml(tag)}"><h2>${escapeHtml(tag)}</h2>${ops.join("")}</section>`,
    )
    .join("");
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(doc.info.title)} API reference</title><style>${REFERENCE_CSS}</style></head><body>
<header><strong>${escapeHtml(doc.info.title)} API</strong> <span>v${escapeHtml(doc.info.version)}</span><a href="/openapi.json">openapi.json</a><a href="/dashboard">dashboard</a>
<form id="auth"><label>Bearer token <input id="token" type="password" autocomplete="off" placeholder="EDGEQ_TOKEN"></label><button type="submit">Use</button><button type="button" id="forget">Forget</button><span id="auth-state" role="status"></span></form></header>
<div class="layout"><nav aria-label="Operations">${navHtml}</nav><main><p>${proseHtml(doc.info.description ?? "")}</p>
<p class="notes">Machine-readable: <a href="/openapi.json">/openapi.json</a> (OpenAPI 3.1). Try-it sends requests from this page to this Worker with the token above, kept in this tab only (sessionStorage).</p>
<section class="tag" id="errors"><h2>Errors</h2><p>Every error, on every route, has this body; each operation lists its statuses and their codes.</p>${schemaBlock(components, { $ref: ERROR_REF })}<pre>${json({ error: { code: "invalid_request", message: "max: Too big: expected number to be <=100" } })}</pre></section>${body}</main></div>
<script>${TRY_IT_JS}</script></body></html>`;
}
