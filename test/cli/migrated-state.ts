import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readD1Migrations } from "@cloudflare/vitest-plugin";
import { parse } from "smol-toml";

/**
 * A local state (D1 of every shard) with every migration applied, made once per test run and copied for each
 * server the tests start.
 *
 * Why: wrangler applies a local migration by booting a workerd per migration file, about 12 s of CPU per
 * database from scratch (2 shards, 19 files; measured with `time wrangler d1 migrations apply DB --local`
 * on these 2 cores). Five server starts in `npm test` (the cli and browser projects' servers, sdk-restart's
 * two, npm start's) paid it each; a copy of this state costs milliseconds and holds the same databases.
 * The template itself is made in one workerd (applyMigrations below): the same files, statements and
 * `d1_migrations` rows in the same SQLite files wrangler writes, in one boot instead of 38.
 *
 * The global setups (test/cli/server.ts, run in Vitest's main process) make it and pass its path to test
 * files as `edgeqMigratedState`; a file that starts a server of its own copies it (migratedStateCopy).
 */
const TEMPLATE = Symbol.for("edgeq.test.migrated-state");

export interface Template {
  /** The template's directory: complete once `made` resolves. */
  dir: string;
  made: Promise<void>;
}

/** The run's migrated template, started on the first call. Release it with releaseTemplate. */
export function migratedTemplate(root: string): Template {
  const global = globalThis as { [TEMPLATE]?: Template & { users: number } };
  if (!global[TEMPLATE]) {
    const dir = mkdtempSync(join(tmpdir(), "edgeq-migrated-"));
    global[TEMPLATE] = { dir, made: applyMigrations(root, dir), users: 0 };
  }
  global[TEMPLATE].users += 1;
  return global[TEMPLATE];
}

/** Ends one user's hold on the template; the last removes it. */
export async function releaseTemplate(): Promise<void> {
  const global = globalThis as { [TEMPLATE]?: Template & { users: number } };
  const template = global[TEMPLATE];
  if (!template || --template.users > 0) return;
  delete global[TEMPLATE];
  await template.made.catch(() => undefined);
  rmSync(template.dir, { recursive: true, force: true });
}

/** Copies the migrated template at `template` into the directory `into` (made if missing); returns `into`. */
export function copyMigratedState(template: string, into: string): string {
  cpSync(template, into, { recursive: true });
  return into;
}

/** A fresh temporary directory holding a copy of the migrated template at `template`. */
export function migratedStateCopy(template: string): string {
  return copyMigratedState(template, mkdtempSync(join(tmpdir(), "edgeq-state-")));
}

/** wrangler's own table of applied migrations, as `wrangler d1 migrations apply` creates it (the same text,
 * so the stored schema is the same too). */
const MIGRATIONS_TABLE = `CREATE TABLE IF NOT EXISTS "d1_migrations"(
		id         INTEGER PRIMARY KEY AUTOINCREMENT,
		name       TEXT UNIQUE,
		applied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL
)`;

/**
 * Applies every migration to each shard of wrangler.toml's [env.local] in the state directory `persistTo`,
 * as `wrangler d1 migrations apply <shard> --local --persist-to <persistTo>` would: each file's statements
 * (split as wrangler splits them, readD1Migrations) and its row in `d1_migrations` in one batch. Through
 * wrangler's own getPlatformProxy, so the SQLite files are the ones `wrangler dev --persist-to` opens (named
 * after the database ids, written by the same Miniflare and workerd); wrangler itself then finds nothing
 * left to apply (test/cli/npm-start.test.ts). The proxy is given a config of those D1 databases only: with
 * the Worker's Durable Objects and no Worker to export them, workerd warns about each class.
 *
 * Why not `wrangler d1 migrations apply`: it boots a workerd per migration file and shard (38 boots: 91 s
 * and 32 s of CPU at load 13 on these 2 cores, against 11 s and 5 s for this), before any cli test starts.
 */
async function applyMigrations(root: string, persistTo: string): Promise<void> {
  const config = parse(readFileSync(join(root, "wrangler.toml"), "utf8")) as {
    name: string;
    compatibility_date: string;
    env: { local: { d1_databases: Array<{ binding: string; database_id: string; migrations_dir: string }> } };
  };
  const shards = config.env.local.d1_databases;
  const configPath = join(persistTo, "d1-only.wrangler.json");
  writeFileSync(
    configPath,
    JSON.stringify({ name: config.name, compatibility_date: config.compatibility_date, d1_databases: shards }),
  );
  const { getPlatformProxy } = await import("wrangler");
  // wrangler dev --persist-to <dir> keeps its state under <dir>/v3.
  const proxy = await getPlatformProxy<Record<string, D1Database>>({
    configPath,
    persist: { path: join(persistTo, "v3") },
    remoteBindings: false,
  });
  try {
    for (const shard of shards) {
      const migrations = await readD1Migrations(join(root, shard.migrations_dir));
      const db = proxy.env[shard.binding]!;
      await db.prepare(MIGRATIONS_TABLE).run();
      for (const migration of migrations) {
        await db.batch([
          ...migration.queries.map((query) => db.prepare(query)),
          db.prepare(`INSERT INTO "d1_migrations" (name) VALUES (?)`).bind(migration.name),
        ]);
      }
    }
  } finally {
    await proxy.dispose();
    rmSync(configPath);
  }
}
