import { openDb, type Db } from "../db/client";
import type { Env } from "../env";
import { EdgeqError } from "../contracts/errors";
import { hybridTaskStore } from "../engine/hybrid/hybrid-store";
import type { TaskStore } from "../engine/store";

/** The first database: every deployment has it; it also holds the shard directory and global tables. */
export const HOME_SHARD = "DB";

/** D1 bindings that are shards: `DB`, then `DB_1`, `DB_2`, ... (each migrated by the same files). */
const SHARD_BINDING = /^DB(?:_([1-9][0-9]*))?$/;

export interface Shard {
  /** The binding name, as recorded in the directory. */
  name: string;
  db: Db;
  /** The database's tasks, through the task-store port (src/engine/store.ts). */
  store: TaskStore;
}

/**
 * The task store of one database handle — both layouts, rows and packs (src/engine/hybrid/hybrid-store.ts:
 * an enqueue call of plain tasks is kept in packs, every other in rows) — and the one place a store is made (each kind of store is built here
 * and nowhere else outside src/engine, `stores-built-by-shard-set` in .dependency-cruiser.cjs).
 *
 * @example
 * const store = taskStoreOn(openDb(env.DB));
 */
export function taskStoreOn(db: Db): TaskStore {
  return hybridTaskStore(db);
}

/** The shard of one database handle: its name, its handle and its task store. */
function shardOn(name: string, db: Db): Shard {
  return { name, db, store: taskStoreOn(db) };
}

function shardOrder(name: string): number {
  return Number(SHARD_BINDING.exec(name)?.[1] ?? 0);
}

/**
 * The shards this Worker is bound to, home first, then by number. Discovered from the bindings, so adding a
 * shard is a wrangler.toml change; the directory decides which queues it receives (new ones only).
 */
export function shardNames(env: Env): string[] {
  return Object.keys(env)
    .filter((key) => SHARD_BINDING.test(key) && isD1(env[key as keyof Env]))
    .sort((a, b) => shardOrder(a) - shardOrder(b));
}

function isD1(value: unknown): value is D1Database {
  return typeof value === "object" && value !== null && typeof (value as D1Database).prepare === "function";
}

/** The shard a binding name refers to; a directory row naming a shard this Worker lacks is a 503. */
export function shardOf(env: Env, name: string): Shard {
  const binding = (env as unknown as Record<string, unknown>)[name];
  if (!SHARD_BINDING.test(name) || !isD1(binding)) {
    throw new EdgeqError(
      "shard_unavailable",
      `shard ${name} is in the directory but not bound to this Worker (wrangler.toml d1_databases)`,
    );
  }
  return shardOn(name, openDb(binding));
}

/** Every shard, home first. */
export function allShards(env: Env): Shard[] {
  return shardNames(env).map((name) => shardOf(env, name));
}

/** The home shard (the first database). */
export function homeShard(env: Env): Shard {
  return shardOf(env, HOME_SHARD);
}

/**
 * A read-only view of a shard through D1's Sessions API when the binding offers it: reads may be served by
 * a replica near the Worker, so listings and dashboards do not load the primary. "first-unconstrained":
 * the first read goes wherever is fastest; later reads in the session see at least what it saw. Writes and
 * fenced acks never use this.
 */
export function readShard(env: Env, name: string): Shard {
  const binding = (env as unknown as Record<string, unknown>)[name];
  const shard = shardOf(env, name);
  const session = (binding as D1Database & { withSession?: (c: string) => unknown }).withSession?.(
    "first-unconstrained",
  );
  return session ? shardOn(name, openDb(session as unknown as D1Database)) : shard;
}
