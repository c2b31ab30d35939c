import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { CliError, EXIT } from "./errors.js";

/**
 * edgeq's D1 migrations beside a Worker's own, in the one folder wrangler applies to a database
 * (`migrations_dir`): wrangler applies every `*.sql` file of it whose name its `d1_migrations` table has not
 * recorded, in name order. edgeq's files are copied in under their own names — the names a deployment
 * that applied `node_modules/edgeq/migrations` has recorded, so switching to the folder re-applies nothing —
 * and never changed there: an upgrade of edgeq only adds files, which the next sync copies and the next
 * `wrangler d1 migrations apply` applies, whatever number the Worker's own files have reached.
 */

/** edgeq's migrations, shipped in the package beside the CLI's bundle (dist/edgeq.mjs; cli/ from source). */
export const EDGEQ_MIGRATIONS = fileURLToPath(new URL("../migrations/", import.meta.url));

/** What a sync found and did. */
export interface SyncReport {
  /** edgeq's migrations the folder lacked: copied in (or, with `check`, that would be). */
  missing: string[];
  /** edgeq's migrations already there, unchanged. */
  present: string[];
}

/** The `*.sql` files of a folder, by name (none when it does not exist). */
function sqlFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith(".sql"))
    .map((entry) => entry.name)
    .sort();
}

/**
 * Copies every migration of `from` (edgeq's) that `to` lacks into `to` (created if needed), leaving the
 * folder's other files alone. A file of edgeq's name whose text differs is refused, before anything is
 * copied: wrangler would not apply it again, so the database and the file would disagree. With `check`,
 * copies nothing and reports what is missing.
 *
 * @example
 * syncMigrations(EDGEQ_MIGRATIONS, "migrations"); // { missing: ["0013_…sql"], present: ["0000_init.sql", …] }
 */
export function syncMigrations(from: string, to: string, opts: { check?: boolean } = {}): SyncReport {
  const ours = sqlFiles(from);
  if (ours.length === 0) throw new CliError(`no migrations found in ${from} (a broken install of edgeq?)`, EXIT.input);
  const theirs = new Set(sqlFiles(to));
  const report: SyncReport = { missing: [], present: [] };
  for (const name of ours) {
    if (!theirs.has(name)) {
      report.missing.push(name);
      continue;
    }
    if (!readFileSync(join(to, name)).equals(readFileSync(join(from, name)))) {
      throw new CliError(
        `${join(to, name)} differs from edgeq's ${name}: edgeq's migrations are applied as shipped (a database that ` +
          `applied it will not apply it again); restore it, or delete it and sync again`,
        EXIT.input,
      );
    }
    report.present.push(name);
  }
  if (!opts.check && report.missing.length > 0) {
    mkdirSync(to, { recursive: true });
    for (const name of report.missing) copyFileSync(join(from, name), join(to, name));
  }
  return report;
}
