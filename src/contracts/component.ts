import type * as z from "zod";

/** What zod-to-openapi reads from a schema's `.meta()` to place it in the document's components. */
type ComponentMeta = {
  _internal: { refId: string; extendedFrom?: { refId: string; schema: z.ZodType } };
};

/**
 * The metadata that names a schema as a component of the OpenAPI document (`#/components/schemas/<name>`),
 * given with zod's own `.meta()` so that the core Worker needs no OpenAPI machinery (the reference, at
 * /openapi.json and /docs, is opted into with `edgeq/reference`). It is what `.openapi("Name")` of
 * @hono/zod-openapi stored, which @asteasolutions/zod-to-openapi reads from zod's registry: unlike zod's
 * `id`, it is inherited by the copies `.refine()` and `.meta()` make, so a refined schema stays a `$ref`.
 * `.optional()`, `.nullable()` and `.extend()` do not carry metadata over (`.openapi()` patched them to):
 * a wrapper that must stay a reference spreads its schema's `.meta()` into its own; an extension names the
 * component it extends as `base` (the document then says `allOf: [{ $ref: base }, { …its own fields }]`).
 *
 * @example
 * export const TaskSchema = z.object({ id: z.string() }).meta(component("Task"));
 * export const LeasedTaskSchema = TaskSchema.extend({ token: z.string() }).meta(component("LeasedTask", TaskSchema));
 */
export function component(name: string, base?: z.ZodType): ComponentMeta {
  const baseName = (base?.meta() as Partial<ComponentMeta> | undefined)?._internal?.refId;
  if (base === undefined || baseName === undefined) return { _internal: { refId: name } };
  return { _internal: { refId: name, extendedFrom: { refId: baseName, schema: base } } };
}
