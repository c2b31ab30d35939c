import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readD1Migrations, type D1Migration } from "@cloudflare/vitest-plugin";
import { syncMigrations } from "../../cli/migrations-sync.js";

// Runs in Node (vitest.config.ts): a Worker's own migrations folder kept by `edgeq migrations sync`, as it
// stands before and after an upgrade of edgeq, read as wrangler reads it (readD1Migrations) for
// test/app/user-migrations.test.ts to apply to an empty database.

/** How many of edgeq's newest migrations the upgrade brings: the earlier edgeq shipped the others. */
export const UPGRADE_ADDS = 3;

/** The Worker's own table, in the file `wrangler d1 migrations create DB orders` would have numbered. */
export const ORDERS_SQL = "CREATE TABLE orders (id TEXT PRIMARY KEY, total INTEGER NOT NULL);\n";

export type UserMigrationStages = {
  /** The folder with an earlier edgeq's migrations and the Worker's own first one. */
  before: D1Migration[];
  /** The same folder after `edgeq migrations sync` of the newer edgeq and a second migration of its own. */
  after: D1Migration[];
};

/**
 * Builds the Worker's folder in a scratch directory: sync of an earlier edgeq (all of `edgeqMigrations` but
 * the UPGRADE_ADDS newest), the Worker's `orders` migration numbered after them; then sync of the whole of
 * `edgeqMigrations` (the upgrade) and one more migration of the Worker's, numbered after everything.
 *
 * @example
 * const stages = await userMigrationStages(fileURLToPath(new URL("./migrations", import.meta.url)));
 */
export async function userMigrationStages(edgeqMigrations: string): Promise<UserMigrationStages> {
  const root = mkdtempSync(join(tmpdir(), "edgeq-user-migrations-"));
  try {
    const all = readdirSync(edgeqMigrations)
      .filter((name) => name.endsWith(".sql"))
      .sort();
    const earlier = join(root, "edgeq-earlier");
    mkdirSync(earlier);
    for (const name of all.slice(0, -UPGRADE_ADDS)) copyFileSync(join(edgeqMigrations, name), join(earlier, name));
    const own = join(root, "migrations");
    const numbered = (n: number, name: string) => `${String(n).padStart(4, "0")}_${name}.sql`;
    syncMigrations(earlier, own);
    writeFileSync(join(own, numbered(all.length - UPGRADE_ADDS, "orders")), ORDERS_SQL);
    const before = await readD1Migrations(own);
    syncMigrations(edgeqMigrations, own);
    writeFileSync(join(own, numbered(all.length + 1, "order_notes")), "ALTER TABLE orders ADD COLUMN note TEXT;\n");
    const after = await readD1Migrations(own);
    return { before, after };
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}
