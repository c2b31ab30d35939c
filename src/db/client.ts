import { drizzle } from "drizzle-orm/d1";
import * as schema from "./schema";

/** The Drizzle handle every engine function takes as its first argument. */
export type Db = ReturnType<typeof openDb>;

/** Wraps the D1 binding; cheap, so each request or alarm opens its own. */
export function openDb(d1: D1Database) {
  return drizzle(d1, { schema });
}
