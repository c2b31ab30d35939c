import type { SQL } from "drizzle-orm";
import { drizzle } from "drizzle-orm/d1";
import * as schema from "./schema";
import { queryText } from "./query-text";

/** The Drizzle handle every engine function takes as its first argument. */
export type Db = ReturnType<typeof openDb>;

/** One Drizzle handle per binding object: building one reads the whole schema's relations again
 * (`extractTablesRelationalConfig`, 1.5 % of the Worker's CPU in a burn-down when every request and every
 * coordinator call built its own; docs/benchmarks.md, section 3b). A handle keeps no per-request state. */
const handles = new WeakMap<D1Database, ReturnType<typeof open>>();

function open(d1: D1Database) {
  return drizzle(d1, { schema });
}

/** The Drizzle handle of a D1 binding (made once per binding object, then reused). */
export function openDb(d1: D1Database) {
  let db = handles.get(d1);
  if (db === undefined) handles.set(d1, (db = open(d1)));
  return db;
}

/** A D1 statement from a Drizzle `sql` template (parameters stay bound, never inlined). */
export function prepare(db: Db, query: SQL): D1PreparedStatement {
  const { sql, params } = queryText(query);
  return db.$client.prepare(sql).bind(...params);
}

/** Runs one raw statement and returns its rows: `db.all` of a `sql` template, through `prepare`'s builder. */
export async function allRows<T = Record<string, unknown>>(db: Db, query: SQL): Promise<T[]> {
  return (await prepare(db, query).all<T>()).results;
}

/**
 * Runs raw statements as one D1 batch — D1's only transaction: all succeed or none is applied, and no
 * other statement runs between them. Returns each statement's rows.
 */
export async function batchAll<T = Record<string, unknown>>(db: Db, queries: SQL[]): Promise<T[][]> {
  if (queries.length === 0) return [];
  const results = await db.$client.batch<T>(queries.map((q) => prepare(db, q)));
  return results.map((r) => r.results);
}
