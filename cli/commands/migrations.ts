import { CliError, EXIT } from "../errors";
import type { Command } from "../command";
import { positionals } from "../flags";
import { EDGEQ_MIGRATIONS, syncMigrations } from "../migrations-sync";
import { plural, writeJson } from "../output";

/**
 * `edgeq migrations sync <dir>`: copies edgeq's D1 migrations into a Worker's own migrations folder, the one
 * its wrangler.toml applies (`migrations_dir`), beside the Worker's own (cli/migrations-sync.ts says how
 * their order holds across upgrades). Talks to no server.
 */
export const migrationsSync: Command = {
  summary: "Copy edgeq's D1 migrations into your Worker's migrations folder",
  usage: "edgeq migrations sync <dir> [--check] [--json]",
  options: {
    check: { type: "boolean", description: "copy nothing; exit 1 when the folder lacks any of edgeq's migrations" },
    json: { type: "boolean", description: "print { missing, present } as JSON" },
  },
  async run(ctx) {
    const [dir] = positionals(ctx, migrationsSync, ["dir"]) as [string];
    const check = ctx.flags.check === true;
    const report = syncMigrations(EDGEQ_MIGRATIONS, dir, { check });
    if (ctx.flags.json) writeJson(ctx.stdout, report);
    const names = report.missing.join(", ");
    if (check && report.missing.length > 0) {
      throw new CliError(`${dir} lacks edgeq's ${names}: run edgeq migrations sync ${dir}`, EXIT.api);
    }
    if (ctx.flags.json) return;
    ctx.stdout.write(
      report.missing.length === 0
        ? `${dir} has edgeq's ${plural(report.present.length, "migration")}\n`
        : `copied ${report.missing.length} of edgeq's migrations into ${dir}: ${names}\n`,
    );
  },
};
