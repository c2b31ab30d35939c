import { SQL, StringChunk } from "drizzle-orm";
import { SQLiteAsyncDialect } from "drizzle-orm/sqlite-core";

/** A statement's text and its bound values, as D1 takes them. */
export interface QueryText {
  sql: string;
  params: unknown[];
}

const dialect = new SQLiteAsyncDialect();

/**
 * The text and bound values of a Drizzle `sql` template, as `SQLiteAsyncDialect.sqlToQuery` builds them — the
 * same text, the same values in the same order — for the templates the engine writes: text, nested templates,
 * arrays, `undefined` and plain values (each a `?`). Any other piece (a table, a column, an identifier, a
 * `sql.param`, a placeholder, params inlined) hands the whole statement to Drizzle's own builder.
 *
 * Why: Drizzle's builder tests each piece against its entity classes by walking prototypes and copies its
 * options per nested template; the served store's lease and complete of 100 build statements of thousands of
 * pieces (lease-sql.ts, slot-splice.ts), and building them took ~0.6 ms of a burn-down cycle's JavaScript, this
 * builder ~0.1 (measured on node:sqlite; docs/design/packs.md, "Speed as served"). test/db/query-text.test.ts
 * holds the two builders equal.
 *
 * @example
 * queryText(sql`SELECT * FROM packs WHERE id IN ${["a", "b"]} AND ver = ${3}`);
 * // { sql: "SELECT * FROM packs WHERE id IN (?, ?) AND ver = ?", params: ["a", "b", 3] }
 */
export function queryText(query: SQL): QueryText {
  const params: unknown[] = [];
  const text = templateText(query, params);
  return text === null ? dialect.sqlToQuery(query) : { sql: text, params };
}

/** Drizzle's flag for a template whose values are written into its text (`.inlineParams()`). */
const inlines = (query: SQL) => (query as unknown as { shouldInlineParams?: boolean }).shouldInlineParams === true;

/** A template's text, its values appended to `params`; null where a piece is not one this builder writes. */
function templateText(query: SQL, params: unknown[]): string | null {
  if (inlines(query)) return null;
  let text = "";
  for (const chunk of query.queryChunks) {
    const piece = chunkText(chunk, params);
    if (piece === null) return null;
    text += piece;
  }
  return text;
}

function chunkText(chunk: unknown, params: unknown[]): string | null {
  if (chunk instanceof StringChunk) return chunk.value.join("");
  if (chunk instanceof SQL) return templateText(chunk, params);
  if (chunk === undefined) return "";
  if (Array.isArray(chunk)) {
    // As Drizzle: the items in parentheses, separated by commas.
    let text = "(";
    for (let i = 0; i < chunk.length; i++) {
      const piece = chunkText(chunk[i], params);
      if (piece === null) return null;
      text += i < chunk.length - 1 ? `${piece}, ` : piece;
    }
    return `${text})`;
  }
  if (chunk === null || (typeof chunk !== "object" && typeof chunk !== "function")) {
    params.push(chunk);
    return "?";
  }
  return null;
}
