import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect, inject, it } from "vitest";
import { renderApiReference } from "../../scripts/api-docs.mjs";

/**
 * docs/api.md carries a reference generated from the running Worker's /openapi.json between
 * `<!-- generated: openapi -->` and `<!-- /generated -->`: this test fails when it drifts from what the
 * server validates. `UPDATE_API_DOCS=1` rewrites it instead.
 */
const DOC = join(process.cwd(), "docs", "api.md");
const BLOCK = /(<!-- generated: openapi -->\n\n)[\s\S]*?(<!-- \/generated -->)/;

it("docs/api.md's reference is the server's OpenAPI document, rendered", async () => {
  const res = await fetch(`${inject("edgeqUrl")}/openapi.json`);
  expect(res.status).toBe(200);
  const reference = renderApiReference(await res.json());
  expect(reference).toContain("### `POST /v1/queues/{queue}/lease`");
  const doc = readFileSync(DOC, "utf8");
  expect(doc).toMatch(BLOCK);
  const fresh = doc.replace(BLOCK, (_, open: string, close: string) => `${open}${reference}\n${close}`);
  if (process.env.UPDATE_API_DOCS === "1") writeFileSync(DOC, fresh);
  else expect(doc, "run UPDATE_API_DOCS=1 npx vitest run --project cli test/cli/docs-api.test.ts").toBe(fresh);
});
