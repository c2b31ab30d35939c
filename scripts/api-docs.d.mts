/** Renders docs/api.md's reference from an OpenAPI 3.1 document (see api-docs.mjs). */
export function renderApiReference(doc: unknown): string;
