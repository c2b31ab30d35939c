// `npm run examples` (and test/examples/examples.test.ts): what a user of the package gets, tried as one.
// Packs edgeq (`npm pack`, which builds it) into examples/edgeq.tgz, installs each example from that
// tarball in its own folder, and runs its `npm test`. Exits non-zero naming the examples that failed.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, readFileSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";

const root = new URL("..", import.meta.url).pathname;
const examples = join(root, "examples");
/** In the order they depend on each other: producer's test serves queue-worker beside it. */
const ORDER = ["queue-worker", "producer", "node-worker"];
const only = process.argv.slice(2);

/** @param {string[]} args @param {string} cwd */
const npm = (args, cwd) => spawnSync("npm", args, { cwd, stdio: "inherit", env: process.env });

// npm pack names the tarball <name>-<version>.tgz (its --json answer is mixed with prepare's output).
const { name, version } = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
execFileSync("npm", ["pack", "--loglevel=error", "--pack-destination", examples], {
  cwd: root,
  stdio: ["ignore", "ignore", "inherit"],
});
renameSync(join(examples, `${name}-${version}.tgz`), join(examples, "edgeq.tgz"));

const failed = [];
for (const example of ORDER.filter((n) => only.length === 0 || only.includes(n))) {
  const dir = join(examples, example);
  if (!existsSync(join(dir, "package.json"))) continue;
  // A fresh install of the new tarball: npm keeps a file: dependency's old copy and lock entry otherwise.
  rmSync(join(dir, "node_modules", "edgeq"), { recursive: true, force: true });
  rmSync(join(dir, "package-lock.json"), { force: true });
  console.log(`\n== examples/${example}: npm install && npm test`);
  const installed = npm(["install", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"], dir);
  if (installed.status !== 0 || npm(["test"], dir).status !== 0) failed.push(example);
}
if (failed.length > 0) {
  console.error(`\nexamples failed: ${failed.join(", ")}`);
  process.exit(1);
}
console.log("\nevery example passed");
