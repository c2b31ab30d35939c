/**
 * Renders the API reference in docs/api.md from the Worker's own OpenAPI document, so the reference cannot
 * drift from what the server validates: test/cli/docs-api.test.ts compares the two (and rewrites the
 * generated part with UPDATE_API_DOCS=1).
 *
 * @example
 * const markdown = renderApiReference(await (await fetch(`${url}/openapi.json`)).json());
 */

/** @typedef {Record<string, any>} Json An OpenAPI document or a part of it, as parsed JSON. */

/**
 * Follows a local `$ref` ("#/components/schemas/Task") to its schema.
 * @param {Json} doc
 * @param {Json | undefined} schema
 * @returns {Json}
 */
function resolve(doc, schema) {
  if (!schema || typeof schema !== "object" || !schema.$ref) return schema ?? {};
  const path = schema.$ref.replace(/^#\//, "").split("/");
  return resolve(
    doc,
    path.reduce((/** @type {Json | undefined} */ node, /** @type {string} */ key) => node?.[key], doc),
  );
}

/**
 * A schema's type in a few words: `integer 1–100`, `string`, `Task[]`, `"pull" | "push"`.
 * @param {Json} doc
 * @param {Json | undefined} schema
 * @returns {string}
 */
function typeOf(doc, schema) {
  if (schema?.$ref) return schema.$ref.split("/").pop();
  const s = schema ?? {};
  if (s.enum) return s.enum.map((/** @type {unknown} */ v) => JSON.stringify(v)).join(" \\| ");
  if (s.const !== undefined) return JSON.stringify(s.const);
  const variants = s.anyOf ?? s.oneOf;
  if (variants) return variants.map((/** @type {Json} */ v) => typeOf(doc, v)).join(" \\| ");
  let type = Array.isArray(s.type)
    ? s.type.filter((/** @type {string} */ t) => t !== "null").join(" \\| ")
    : (s.type ?? "any");
  if (type === "array") type = `${typeOf(doc, s.items)}[]`;
  const min = s.minimum ?? s.minLength ?? s.minItems;
  const max = s.maximum ?? s.maxLength ?? s.maxItems;
  if (min !== undefined && max !== undefined) type += ` ${min}–${max}`;
  else if (max !== undefined) type += ` ≤ ${max}`;
  else if (min !== undefined) type += ` ≥ ${min}`;
  if (Array.isArray(s.type) && s.type.includes("null")) type += " \\| null";
  return type;
}

/**
 * One table row per property of an object schema (merging the object arms of a union).
 * @param {Json} doc
 * @param {Json} schema
 * @returns {string[]}
 */
function fieldRows(doc, schema) {
  const s = resolve(doc, schema);
  const arms = [s, ...(s.anyOf ?? []), ...(s.oneOf ?? [])].map((arm) => resolve(doc, arm));
  const rows = new Map();
  for (const arm of arms) {
    for (const [name, prop] of Object.entries(arm.properties ?? {})) {
      if (rows.has(name)) continue;
      const required = (arm.required ?? []).includes(name) ? "yes" : "";
      const p = resolve(doc, prop);
      const dflt = p.default !== undefined ? ` (default ${JSON.stringify(p.default)})` : "";
      const description = (p.description ?? "").replace(/\n/g, " ").replace(/\|/g, "\\|");
      rows.set(name, `| \`${name}\` | ${typeOf(doc, prop)}${dflt} | ${required} | ${description} |`);
    }
  }
  return [...rows.values()];
}

/** @param {string[]} rows */
function table(rows) {
  if (rows.length === 0) return [];
  return ["| Field | Type | Required | Description |", "| --- | --- | --- | --- |", ...rows, ""];
}

/**
 * The reference: every operation with its parameters, body fields, success and error statuses.
 * @param {Json} doc
 * @returns {string}
 */
export function renderApiReference(doc) {
  const out = [];
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const [method, op] of Object.entries(item)) {
      out.push(`### \`${method.toUpperCase()} ${path}\``, "");
      if (op.summary) out.push(`${op.summary}.`, "");
      if (op.description) out.push(op.description.trim(), "");
      const params = (op.parameters ?? []).map((/** @type {Json} */ p) => {
        const s = resolve(doc, p.schema);
        const description = (p.description ?? s.description ?? "").replace(/\|/g, "\\|");
        return `| \`${p.name}\` (${p.in}) | ${typeOf(doc, p.schema)} | ${p.required ? "yes" : ""} | ${description} |`;
      });
      out.push(...table(params));
      const body = op.requestBody?.content;
      const bodySchema = body?.["application/json"]?.schema;
      if (bodySchema) {
        const rule = resolve(doc, bodySchema).description;
        out.push("Body:", "", ...table(fieldRows(doc, bodySchema)));
        if (rule) out.push(`Rule: ${rule}`, "");
      } else if (body) {
        out.push(`Body: ${Object.keys(body).join(", ")}`, "");
      }
      // Success statuses with their description; errors by status and code (the codes are explained once,
      // in docs/errors.md).
      const statuses = Object.entries(op.responses ?? {}).map(([status, r]) => {
        const codes = [...(r.description ?? "").matchAll(/`([a-z_]+)`:/g)].map((m) => m[1]);
        return codes.length > 0 ? `${status} ${codes.join(", ")}` : `${status} ${r.description ?? ""}`.trim();
      });
      out.push(`Responses: ${statuses.join(" · ")}`, "");
    }
  }
  return `${out.join("\n").trimEnd()}\n`;
}
