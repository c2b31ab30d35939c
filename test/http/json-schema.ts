/**
 * A small JSON Schema (2020-12) checker for what /openapi.json uses in request bodies: $ref, type, enum,
 * properties, required, additionalProperties, items, min/max (items, length, value), pattern, anyOf,
 * oneOf, allOf, not. It answers what a client generated from the document would believe: may I send this?
 * (Ajv cannot run here: workerd forbids generating code from strings.)
 */
export interface JsonSchema {
  $ref?: string;
  type?: string | string[];
  enum?: unknown[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  minItems?: number;
  maxItems?: number;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  pattern?: string;
  format?: string;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
  not?: JsonSchema;
}

function typeOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  return typeof value;
}

/**
 * Whether `value` is valid against `schema`, resolving `$ref`s in `components`.
 *
 * @example
 * isValid({ type: "object", required: ["a"] }, {}, {}); // false
 */
export function isValid(schema: JsonSchema, value: unknown, components: Record<string, JsonSchema>): boolean {
  const check = (s: JsonSchema, v: unknown): boolean => {
    if (s.$ref) return check(components[s.$ref.replace("#/components/schemas/", "")]!, v);
    const actual = typeOf(v);
    if (s.type !== undefined) {
      const types = [s.type].flat();
      const ok = types.some((t) => t === actual || (t === "integer" && Number.isInteger(v)));
      if (!ok) return false;
    }
    if (s.enum && !s.enum.includes(v)) return false;
    if (actual === "string") {
      const text = v as string;
      const length = [...text].length;
      if (s.minLength !== undefined && length < s.minLength) return false;
      if (s.maxLength !== undefined && length > s.maxLength) return false;
      if (s.pattern !== undefined && !new RegExp(s.pattern, "u").test(text)) return false;
      if (s.format === "date-time" && Number.isNaN(Date.parse(text))) return false;
    }
    if (actual === "number") {
      const n = v as number;
      if (s.minimum !== undefined && n < s.minimum) return false;
      if (s.maximum !== undefined && n > s.maximum) return false;
    }
    if (actual === "array") {
      const list = v as unknown[];
      if (s.minItems !== undefined && list.length < s.minItems) return false;
      if (s.maxItems !== undefined && list.length > s.maxItems) return false;
      if (s.items && !list.every((item) => check(s.items!, item))) return false;
    }
    if (actual === "object") {
      const object = v as Record<string, unknown>;
      if ((s.required ?? []).some((key) => !(key in object))) return false;
      for (const [key, item] of Object.entries(object)) {
        const property = s.properties?.[key];
        if (property) {
          if (!check(property, item)) return false;
        } else if (s.additionalProperties === false) {
          return false;
        } else if (typeof s.additionalProperties === "object" && !check(s.additionalProperties, item)) {
          return false;
        }
      }
    }
    if (s.allOf && !s.allOf.every((sub) => check(sub, v))) return false;
    if (s.anyOf && !s.anyOf.some((sub) => check(sub, v))) return false;
    if (s.oneOf && s.oneOf.filter((sub) => check(sub, v)).length !== 1) return false;
    if (s.not && check(s.not, v)) return false;
    return true;
  };
  return check(schema, value);
}
