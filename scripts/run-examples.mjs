// What a user of the package gets, tried as one: run by `npm run examples` (test/examples/examples.test.ts).
// Copies examples/ to a scratch folder outside the repository (so nothing resolves through the repository's
// own node_modules), packs edgeq there (`npm pack`, whose prepack builds it) as edgeq.tgz, installs each
// example from that tarball in its own folder, and runs its `npm test`; then creates a project with
// create-edgeq on the same tarball and runs its `npm test` and `npm run dev` (scripts/try-create-edgeq.mjs).
// Exits non-zero naming the examples that failed, keeping the scratch folder to look into; removes it when
// every example passed. `node scripts/run-examples.mjs queue-worker create-edgeq` runs only those named.
import { cpSync, existsSync, mkdtempSync, readFileSync, renameSync, rmSync } from "node:fs";
import { execFileSync, spawnSync } from "node:child_process";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import process from "node:process";
import { tryCreateEdgeq } from "./try-create-edgeq.mjs";

const root = new URL("..", import.meta.url).pathname;
/** In the order they depend on each other: producer's and workflow's tests serve queue-worker beside them. */
const ORDER = ["queue-worker", "producer", "workflow", "node-worker"];
const only = process.argv.slice(2);
/** What a local run leaves in examples/ and a user's copy would not have. */
const LEFT_BY_RUNS = new Set(["node_modules", ".wrangler", "package-lock.json", "edgeq.tgz"]);

/** @param {string[]} args @param {string} cwd */
const npm = (args, cwd) => spawnSync("npm", args, { cwd, stdio: "inherit", env: process.env });

const scratch = mkdtempSync(join(tmpdir(), "edgeq-examples-"));
cpSync(join(root, "examples"), scratch, { recursive: true, filter: (path) => !LEFT_BY_RUNS.has(basename(path)) });

// npm pack names the tarball <name>-<version>.tgz (its --json answer is mixed with prepack's output).
const { name, version } = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
execFileSync("npm", ["pack", "--loglevel=error", "--pack-destination", scratch], {
  cwd: root,
  stdio: ["ignore", "ignore", "inherit"],
});
renameSync(join(scratch, `${name}-${version}.tgz`), join(scratch, "edgeq.tgz"));

const failed = [];
for (const example of ORDER.filter((n) => only.length === 0 || only.includes(n))) {
  const dir = join(scratch, example);
  if (!existsSync(join(dir, "package.json"))) continue;
  console.log(`\n== examples/${example} (in ${dir}): npm install && npm test`);
  const installed = npm(["install", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"], dir);
  if (installed.status !== 0 || npm(["test"], dir).status !== 0) failed.push(example);
}
if (only.length === 0 || only.includes("create-edgeq")) {
  if (!(await tryCreateEdgeq({ root, scratch, edgeq: join(scratch, "edgeq.tgz") }))) failed.push("create-edgeq");
}
if (failed.length > 0) {
  console.error(`\nexamples failed: ${failed.join(", ")} (left in ${scratch})`);
  process.exit(1);
}
rmSync(scratch, { recursive: true, force: true });
console.log("\nevery example passed");
