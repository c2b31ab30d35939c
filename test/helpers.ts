import { env } from "cloudflare:workers";
import { sql, type SQL } from "drizzle-orm";
import { openDb, type Db } from "../src/db/client";
import type { TaskRow } from "../src/db/schema";
import type { StoredTask } from "../src/contracts/stored-task";
import type { AppDeps } from "../src/http/app";
import { REFERENCE_PROCESSORS } from "../src/plugins/reference";
import { ProcessorRegistry } from "../src/processors/registry";
import { allShards, taskStoreOn } from "../src/shards/shard-set";
import { queueRoute } from "../src/shards/queue-route";
import { dashboard } from "../src/http/parts/dashboard";
import { reference } from "../src/http/parts/reference";
import { sqs } from "../src/http/parts/sqs";

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

/** The stored task on whichever shard holds it, in either layout (a row, or a task of a pack), as its store
 * reads it (tests also enqueue through the engine, bypassing the slot-carrying ids the routes give, so this
 * looks on every shard rather than through the locator). */
export async function row(id: string): Promise<TaskRow> {
  const task = await taskStoreOn(await taskDb(id)).getTask(id);
  return task as TaskRow;
}

/** The database holding a task, in either layout (tests that move a time D1 cannot fake: their UPDATEs of
 * `tasks` change a row task only). */
export async function taskDb(id: string): Promise<Db> {
  for (const shard of allShards(env)) {
    if ((await taskStoreOn(shard.db).findTaskState(id)) !== null) return shard.db;
  }
  throw new Error(`test: task ${id} is on no shard`);
}

/** Every task of a queue on one database, in either layout, in id order, as its store lists them. */
export async function queueTasksOn(db: Db, queue: string): Promise<StoredTask[]> {
  const store = taskStoreOn(db);
  const tasks: StoredTask[] = [];
  for (let cursor: string | undefined; ;) {
    const page = await store.listTasks(queue, { limit: 500, cursor });
    tasks.push(...page.tasks);
    if (page.next_cursor === null) return tasks;
    cursor = page.next_cursor;
  }
}

/** Every task of a queue over every shard, in either layout, for before/after comparisons: its rows as
 * stored, and its pack tasks as their store reads them. */
export async function snapshot(queue: string): Promise<unknown[]> {
  const all = await Promise.all(
    allShards(env).map(async (s) => {
      const rows = await s.db.all<{ id: string }>(sql`SELECT * FROM tasks WHERE queue = ${queue}`);
      const inRows = new Set(rows.map((r) => r.id));
      return [...rows, ...(await queueTasksOn(s.db, queue)).filter((t) => !inRows.has(t.id))];
    }),
  );
  return all.flat().sort((a, b) => (a.id < b.id ? -1 : 1));
}

/** The processor types this Worker registers, as the config route passes them to putQueueConfig. */
/** The processors of this repository's own deployment (src/index.ts), as the Worker under test has them. */
export const REFERENCE_REGISTRY = new ProcessorRegistry(REFERENCE_PROCESSORS);
/** What a test builds the HTTP app with when it calls it directly (`buildApp(TEST_APP_DEPS)`): every part, as
 * src/index.ts serves them. */
export const TEST_APP_DEPS: AppDeps = { processors: REFERENCE_REGISTRY, parts: { dashboard, sqs, reference } };
export const PROCESSORS = REFERENCE_REGISTRY.types();

/** The database a queue is placed on (placing it now, as its first enqueue would): for tests that drive the
 * engine directly beside the routes or the coordinator, which route by the directory. */
export async function queueDb(queue: string): Promise<Db> {
  return (await queueRoute(env, queue, Date.now())).parts[0]!.shard.db;
}

/** Runs a read on every shard and concatenates the rows (queue-wide assertions over the routes' writes). */
export async function allRows<T>(query: SQL): Promise<T[]> {
  return (await Promise.all(allShards(env).map((s) => s.db.all<T>(query)))).flat();
}
