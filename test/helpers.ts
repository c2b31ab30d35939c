import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { openDb, type Db } from "../src/db/client";
import type { TaskRow } from "../src/db/schema";
import { getTask } from "../src/engine/read";
import { defaultRegistry } from "../src/processors/registry";

/** A fixed, readable starting time for tests that move the clock by hand. */
export const T0 = Date.parse("2026-01-01T00:00:00.000Z");

export function db(): Db {
  return openDb(env.DB);
}

/** A queue name unique to one test, so tests in a file never see each other's tasks. */
let counter = 0;
export function uniqueQueue(prefix = "q"): string {
  counter += 1;
  return `${prefix}-${counter}-${Math.random().toString(36).slice(2, 8)}`;
}

/** The stored row, for assertions on exactly what changed. */
export function row(id: string): Promise<TaskRow> {
  return getTask(db(), id);
}

/** Every row of a queue, for before/after comparisons. */
export async function snapshot(queue: string): Promise<unknown[]> {
  return db().all(sql`SELECT * FROM tasks WHERE queue = ${queue} ORDER BY id`);
}

/** The processor types this Worker registers, as the config route passes them to putQueueConfig. */
export const PROCESSORS = defaultRegistry.list().map((p) => p.type);
