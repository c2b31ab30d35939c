import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { applyLocalMigrations } from "../../scripts/wrangler-dev.mjs";

/**
 * A local state (D1 of every shard) with every migration applied, made once per test run by the launcher's
 * own applyLocalMigrations (scripts/wrangler-dev.mjs) and copied for each server the tests start.
 *
 * Why: wrangler applies a local migration by booting a workerd per migration file, about 12 s of CPU per
 * database from scratch (2 shards, 17 files; measured with `time wrangler d1 migrations apply DB --local`
 * on these 2 cores). Five server starts in `npm test` (the cli and browser projects' servers, sdk-restart's
 * two, npm start's) paid it each; a copy of this state costs milliseconds and holds the same databases.
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
    global[TEMPLATE] = { dir, made: applyLocalMigrations({ root, persistTo: dir }), users: 0 };
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
