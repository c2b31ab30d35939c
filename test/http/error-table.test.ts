import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import errorsDoc from "../../docs/errors.md?raw";
import { EdgeqError, ERRORS } from "../../src/contracts/errors";
import { onError } from "../../src/http/error-handler";
import { call } from "./api";

/** The rows of the first Markdown table under `heading`, each as its trimmed cells. */
function tableUnder(markdown: string, heading: string): string[][] {
  const lines = markdown.split("\n");
  const start = lines.indexOf(heading);
  expect(start, `${heading} in docs/errors.md`).toBeGreaterThanOrEqual(0);
  const rows: string[][] = [];
  for (const line of lines.slice(start + 1)) {
    if (line.startsWith("## ")) break;
    if (!line.startsWith("|")) {
      if (rows.length > 0) break;
      continue;
    }
    rows.push(
      line
        .slice(1, -1)
        .split(/(?<!\\)\|/)
        .map((cell) => cell.trim()),
    );
  }
  return rows.slice(2); // the header and the |---| line
}

interface Operation {
  responses: Record<string, { description: string }>;
  security?: unknown[];
}

describe("one table of error codes", () => {
  it("docs/errors.md's table is the table in src/contracts/errors.ts, row for row", () => {
    const rows = tableUnder(errorsDoc, "## Errors");
    expect(rows).toEqual(
      ERRORS.map((e) => [`\`${e.code}\``, String(e.status), e.transient ? "yes" : "no", e.description]),
    );
  });

  it("the error handler answers every code with the table's status and the one body", async () => {
    for (const { code, status } of ERRORS) {
      const app = new Hono()
        .get("/", () => {
          throw new EdgeqError(code, `a ${code}`);
        })
        .onError(onError);
      const res = await app.request("/");
      expect(res.status, code).toBe(status);
      expect(await res.json()).toEqual({ error: { code, message: `a ${code}` } });
    }
  });

  it("every operation of the OpenAPI document documents each status of the table with its codes", async () => {
    const doc = (await call<{ paths: Record<string, Record<string, Operation>> }>("GET", "/openapi.json")).body;
    const operations = Object.values(doc.paths).flatMap((item) => Object.values(item));
    expect(operations.length).toBeGreaterThan(10);
    for (const op of operations) {
      // Public GET /health answers 200 or 503 with a body of its own ({ "status" }), never the error envelope.
      if (op.security?.length === 0) continue;
      for (const error of ERRORS.filter((e) => e.code !== "method_not_allowed")) {
        const response = op.responses[String(error.status)];
        expect(response?.description, error.code).toContain(`\`${error.code}\`: ${error.description}`);
      }
      expect(op.responses["405"]).toBeUndefined();
    }
  });
});
