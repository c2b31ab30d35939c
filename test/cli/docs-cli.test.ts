import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";
import { edgeq } from "./commands-support";

/**
 * docs/cli.md carries every command's `--help` between `<!-- help: <command> -->` and `<!-- /help -->`:
 * this test fails when one drifts from what the CLI prints. `UPDATE_CLI_DOCS=1` rewrites them instead.
 */
const DOC = join(process.cwd(), "docs", "cli.md");
const BLOCK = /<!-- help: ([a-z ]+) -->\n\n```text\n[\s\S]*?```\n\n<!-- \/help -->/g;

it("docs/cli.md shows each command's --help as the CLI prints it", async () => {
  const doc = readFileSync(DOC, "utf8");
  const names = [...doc.matchAll(BLOCK)].map((m) => m[1]!);
  expect(names).toEqual([
    "enqueue",
    "list",
    "show",
    "status",
    "watch",
    "deps",
    "dependents",
    "health",
    "schedule set",
    "schedule list",
    "schedule show",
    "schedule rm",
    "schedule pause",
    "schedule resume",
    "schedule trigger",
    "cancel",
    "retry",
    "wait",
    "bulk",
    "purge",
    "dlq list",
    "dlq redrive",
    "pause",
    "resume",
    "config get",
    "config set",
    "migrations sync",
    "worker",
    "worker stop",
  ]);
  const helps = new Map<string, string>();
  for (const name of names) {
    // The built binary (bin/edgeq.mjs → dist/edgeq.mjs), as a user runs it: every command loads in the bundle.
    const run = await edgeq([...name.split(" "), "--help"], { spawn: true });
    expect(run.code, name).toBe(0);
    helps.set(name, run.stdout);
  }
  const fresh = doc.replace(
    BLOCK,
    (_, name: string) => `<!-- help: ${name} -->\n\n\`\`\`text\n${helps.get(name)}\`\`\`\n\n<!-- /help -->`,
  );
  if (process.env.UPDATE_CLI_DOCS === "1") writeFileSync(DOC, fresh);
  else expect(doc, "run UPDATE_CLI_DOCS=1 npx vitest run --project cli test/cli/docs-cli.test.ts").toBe(fresh);
});
