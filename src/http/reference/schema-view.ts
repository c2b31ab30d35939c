/**
 * The API reference's view of JSON Schema (OpenAPI 3.1): schemas expanded into nested property lists, and
 * an example value built from a schema. Rendered on the Worker from the generated document, so the page
 * needs no script to show them.
 */

/** The part of JSON Schema the generated document uses. */
export interface Schema {
  $ref?: string;
  type?: string | string[];
  format?: string;
  description?: string;
  properties?: Record<string, Schema>;
  required?: string[];
  additionalProperties?: boolean | Schema;
  items?: Schema;
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
  not?: Schema;
  enum?: unknown[];
  const?: unknown;
  default?: unknown;
  example?: unknown;
  examples?: unknown[];
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  pattern?: string;
}

/** The named schemas `$ref`s point at (`#/components/schemas/<name>`). */
export type Components = Record<string, Schema>;

/** Schemas nest (a task's `then` holds tasks): deeper than this is shown by name only. Six levels cover
 * every response the API has (an ack result's task's error history is four). */
const MAX_DEPTH = 6;

/** HTML-escapes text for an element or an attribute. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
}

/** Escapes prose and shows its `code spans` as code (the error table and descriptions use them). */
export function proseHtml(text: string): string {
  return escapeHtml(text).replace(/`([^`]+)`/g, "<code>$1</code>");
}

function refName(ref: string): string {
  return ref.replace("#/components/schemas/", "");
}

/** An `allOf` (a leased task is a task plus its lease token) as one object: properties and required merged. */
function mergeAllOf(components: Components, schema: Schema, seen: readonly string[]): Schema {
  if (!schema.allOf) return schema;
  const merged: Schema = { ...schema, allOf: undefined, type: "object", properties: {}, required: [] };
  for (const part of schema.allOf.map((p) => deref(components, p, seen).schema)) {
    Object.assign(merged.properties!, part.properties);
    merged.required!.push(...(part.required ?? []));
  }
  return merged;
}

/** Follows `$ref`s to the schema they name; `seen` holds the names already open above (a cycle stops). */
function deref(components: Components, schema: Schema, seen: readonly string[]): { schema: Schema; name?: string } {
  if (!schema.$ref) return { schema: mergeAllOf(components, schema, seen) };
  const name = refName(schema.$ref);
  if (seen.includes(name)) return { schema: {}, name };
  const target = mergeAllOf(components, components[name] ?? {}, [...seen, name]);
  return { schema: { ...target, description: schema.description ?? target.description }, name };
}

/** A one-line type label: `string (date-time)`, `integer`, `array of Task`, `string | null`. */
function typeLabel(components: Components, schema: Schema): string {
  if (schema.$ref) return refName(schema.$ref);
  const options = schema.anyOf ?? schema.oneOf;
  if (options) return options.map((s) => typeLabel(components, s)).join(" | ");
  if (schema.const !== undefined) return `const ${JSON.stringify(schema.const)}`;
  const types = schema.type === undefined ? [] : [schema.type].flat();
  const parts = types.map((t) => {
    if (t === "array") return `array of ${schema.items ? typeLabel(components, schema.items) : "any"}`;
    if (t === "string" && schema.format) return `string (${schema.format})`;
    return t;
  });
  if (parts.length === 0 && schema.properties) return "object";
  return parts.length > 0 ? parts.join(" | ") : "any JSON";
}

/** Bounds, pattern, allowed values and default, as short text. */
function constraints(schema: Schema): string[] {
  const out: string[] = [];
  if (schema.enum) out.push(`one of ${schema.enum.map((v) => JSON.stringify(v)).join(", ")}`);
  if (schema.minimum !== undefined) out.push(`≥ ${schema.minimum}`);
  if (schema.exclusiveMinimum !== undefined) out.push(`> ${schema.exclusiveMinimum}`);
  if (schema.maximum !== undefined) out.push(`≤ ${schema.maximum}`);
  if (schema.minLength !== undefined) out.push(`min length ${schema.minLength}`);
  if (schema.maxLength !== undefined) out.push(`max length ${schema.maxLength}`);
  if (schema.minItems !== undefined) out.push(`min items ${schema.minItems}`);
  if (schema.maxItems !== undefined) out.push(`max items ${schema.maxItems}`);
  if (schema.pattern !== undefined) out.push(`pattern ${schema.pattern}`);
  if (schema.default !== undefined) out.push(`default ${JSON.stringify(schema.default)}`);
  if (schema.not?.required) out.push(`not all of ${schema.not.required.join(", ")}`);
  return out;
}

/** The schemas nested inside one (an object's own properties, an array's items, each union option). */
function children(components: Components, schema: Schema, depth: number, seen: readonly string[]): string {
  if (depth >= MAX_DEPTH) return "";
  const options = schema.anyOf ?? schema.oneOf;
  if (options && options.some((o) => o.$ref || o.properties || o.items)) {
    const items = options.map(
      (o, i) =>
        `<li><span class="opt">option ${i + 1}: ${escapeHtml(typeLabel(components, o))}</span>${schemaHtml(components, o, depth + 1, seen)}</li>`,
    );
    return `<ul class="options">${items.join("")}</ul>`;
  }
  if (schema.items) return schemaHtml(components, schema.items, depth + 1, seen);
  if (!schema.properties) {
    if (typeof schema.additionalProperties === "object") {
      return `<p class="map">keys: any string; values: ${escapeHtml(typeLabel(components, schema.additionalProperties))}</p>`;
    }
    return "";
  }
  const required = new Set(schema.required ?? []);
  const rows = Object.entries(schema.properties).map(([name, raw]) => {
    const { schema: prop } = deref(components, raw, seen);
    const notes = constraints(prop);
    const description = prop.description ?? raw.description;
    return `<li><code class="prop">${escapeHtml(name)}</code> <span class="type">${escapeHtml(typeLabel(components, raw))}</span>${
      required.has(name) ? ' <span class="req">required</span>' : ""
    }${description ? ` <span class="desc">${proseHtml(description)}</span>` : ""}${
      notes.length > 0 ? ` <span class="notes">${escapeHtml(notes.join("; "))}</span>` : ""
    }${schemaHtml(components, raw, depth + 1, seen)}</li>`;
  });
  const closed = schema.additionalProperties === false ? '<li class="closed">no other fields</li>' : "";
  return `<ul class="props">${rows.join("")}${closed}</ul>`;
}

/**
 * A schema as nested HTML lists: every property with its type, whether it is required, its description
 * and constraints, and its own properties below it.
 *
 * @example
 * schemaHtml(doc.components.schemas, { $ref: "#/components/schemas/NewTask" });
 */
export function schemaHtml(components: Components, schema: Schema, depth = 0, seen: readonly string[] = []): string {
  const { schema: target, name } = deref(components, schema, seen);
  if (name !== undefined && seen.includes(name)) return ` <span class="notes">(${escapeHtml(name)}, as above)</span>`;
  return children(components, target, depth, name === undefined ? seen : [...seen, name]);
}

/** A top-level schema: its type label and constraints, then its expanded properties. */
export function schemaBlock(components: Components, schema: Schema): string {
  const { schema: target } = deref(components, schema, []);
  const notes = constraints(target);
  return `<p class="schema-head"><span class="type">${escapeHtml(typeLabel(components, schema))}</span>${
    notes.length > 0 ? ` <span class="notes">${escapeHtml(notes.join("; "))}</span>` : ""
  }</p>${schemaHtml(components, schema)}`;
}

/** An example value for a string by its format. */
function stringExample(schema: Schema, name: string): string {
  if (schema.format === "date-time") return "2026-11-21T12:00:00.000Z";
  if (schema.format === "uri" || schema.format === "url") return "https://example.com/hook";
  return name || "string";
}

/**
 * An example value for a schema: its own example or default when it has one, else one built from its
 * type. `full` fills optional properties too (responses); requests get the required ones and those with
 * a default, so the example is a small request that works as sent.
 *
 * @example
 * exampleOf(components, { $ref: "#/components/schemas/LeaseBody" }, false); // { max: 1, wait_s: 0 }
 */
export function exampleOf(components: Components, schema: Schema, full: boolean, name = "", depth = 0): unknown {
  const { schema: s, name: ref } = deref(components, schema, []);
  if (depth > MAX_DEPTH) return null;
  if (s.example !== undefined) return s.example;
  if (s.examples?.[0] !== undefined) return s.examples[0];
  if (s.default !== undefined) return s.default;
  if (s.const !== undefined) return s.const;
  if (s.enum?.[0] !== undefined) return s.enum[0];
  const options = s.anyOf ?? s.oneOf;
  if (options) {
    // Prefer the option that is not null (a nullable field's example shows a value).
    const option = options.find((o) => o.type !== "null") ?? options[0]!;
    return exampleOf(components, option, full, name, depth + 1);
  }
  const type = [s.type ?? (s.properties ? "object" : "any")].flat().find((t) => t !== "null") ?? "null";
  switch (type) {
    case "object": {
      const required = new Set(s.required ?? []);
      const out: Record<string, unknown> = {};
      for (const [key, prop] of Object.entries(s.properties ?? {})) {
        const resolved = deref(components, prop, []).schema;
        if (full || required.has(key) || resolved.default !== undefined) {
          // A recursive schema (a task's `then`) stops at its first repeat.
          out[key] =
            ref !== undefined && prop.$ref === `#/components/schemas/${ref}`
              ? null
              : exampleOf(components, prop, full, key, depth + 1);
        }
      }
      return out;
    }
    case "array":
      return full && s.items ? [exampleOf(components, s.items, full, name, depth + 1)] : [];
    case "string":
      return stringExample(s, name);
    case "integer":
    case "number":
      return s.minimum ?? (s.exclusiveMinimum === undefined ? 0 : s.exclusiveMinimum + 1);
    case "boolean":
      return false;
    case "null":
      return null;
    default:
      return full ? { any: "JSON" } : null;
  }
}
