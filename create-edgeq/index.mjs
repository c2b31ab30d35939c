#!/usr/bin/env node
// `npm create edgeq@latest <folder>` (npm runs this package's bin, create-edgeq): writes a new project — a
// Worker embedding edgeq with one processor of its own, its wrangler.toml, tsconfig.json, a test on the
// Cloudflare vitest plugin, a .dev.vars with a development token of its own and a README — into <folder>,
// which must not exist yet or be empty. It installs nothing: `npm install` in the folder does.
//
//   npm create edgeq@latest my-queue
//   npx create-edgeq my-queue --edgeq file:/path/to/edgeq-0.1.0.tgz   (edgeq from elsewhere than the registry)
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { basename, dirname, isAbsolute, join, relative, resolve } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const here = dirname(fileURLToPath(import.meta.url));
const template = join(here, "template");
const { version } = JSON.parse(readFileSync(join(here, "package.json"), "utf8"));

/**
 * The project's name is its Worker's, its npm package's, its D1 database's and, with "-artifacts", its R2
 * bucket's: lowercase letters, digits and inner dashes, and at most 53 characters, as the bucket's name
 * (3 to 63 characters) then still fits.
 */
const NAME = /^[a-z0-9](?:[a-z0-9-]{0,51}[a-z0-9])?$/;

/** What a folder holds that does not make it "not empty". */
const HARMLESS = new Set([".git", ".DS_Store"]);

const USAGE = `Usage: npm create edgeq@latest <folder> [-- --edgeq <spec>]

Writes a new project into <folder> (new, or empty): a Cloudflare Worker embedding edgeq with one processor
of its own, wrangler.toml, tsconfig.json, .dev.vars, a test and a README. Then:
  cd <folder> && npm install && npm test && npm run dev

Options:
  --edgeq <spec>  the edgeq dependency to write (default: edgeq@^${version}): a version range, a tarball
                  path or a file: spec
  -h, --help      this text`;

/** Ends the program with a message and exit code 1. */
function fail(message) {
  console.error(`create-edgeq: ${message}`);
  process.exit(1);
}

/**
 * The dependency spec package.json gets for edgeq: a path to a tarball or folder becomes an absolute
 * `file:` spec (the new project installs from another directory than the one it was named in).
 */
function edgeqSpec(given) {
  if (given === undefined) return `^${version}`;
  const isPath = /^(\.{1,2}[\\/]|[\\/])|\.tgz$/.test(given) || isAbsolute(given);
  return isPath && existsSync(given) ? `file:${resolve(given)}` : given;
}

/** A name close to `raw` that NAME accepts, for the refusal's hint. */
const suggestion = (raw) =>
  raw
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 53)
    .replace(/-+$/, "");

/** Every file under `dir`, as paths relative to it. */
function filesUnder(dir, prefix = "") {
  return readdirSync(join(dir, prefix), { withFileTypes: true }).flatMap((entry) => {
    const path = join(prefix, entry.name);
    return entry.isDirectory() ? filesUnder(dir, path) : [path];
  });
}

const { values, positionals } = (() => {
  try {
    return parseArgs({
      allowPositionals: true,
      options: { edgeq: { type: "string" }, help: { type: "boolean", short: "h" } },
    });
  } catch (error) {
    return fail(`${error.message}\n\n${USAGE}`);
  }
})();
if (values.help) {
  console.log(USAGE);
  process.exit(0);
}
if (positionals.length !== 1) fail(`name one folder to create\n\n${USAGE}`);

const target = resolve(positionals[0]);
const name = basename(target);
if (!NAME.test(name)) {
  const hint = suggestion(name);
  fail(
    `"${name}" cannot name a Worker: use lowercase letters, digits and dashes (at most 53)${hint ? `, e.g. ${hint}` : ""}`,
  );
}
if (existsSync(target) && readdirSync(target).some((entry) => !HARMLESS.has(entry))) {
  fail(`${target} exists and is not empty: name a new folder`);
}

/** The development token wrangler dev serves with: one of this project's own, never a published one. */
const token = `dev-${randomBytes(18).toString("base64url")}`;
const fill = (text) =>
  text.replaceAll("{{name}}", name).replaceAll("{{edgeq}}", edgeqSpec(values.edgeq)).replaceAll("{{token}}", token);

for (const file of filesUnder(template)) {
  mkdirSync(dirname(join(target, file)), { recursive: true });
  writeFileSync(join(target, file), fill(readFileSync(join(template, file), "utf8")));
}
// Written here rather than kept in template/: npm leaves .gitignore files out of a package, and .dev.vars
// carries the token made above.
writeFileSync(join(target, ".gitignore"), "node_modules/\n.wrangler/\n.dev.vars\n");
writeFileSync(
  join(target, ".dev.vars"),
  [
    "# Local development only (wrangler dev and npm run dev read this file; wrangler deploy does not):",
    "# the bearer token the API asks for, and edgeq's development mode (POST /__tick runs the minute tick).",
    "# Deployed, set the token with `npx wrangler secret put EDGEQ_TOKEN`.",
    `EDGEQ_TOKEN=${token}`,
    "ENVIRONMENT=development",
    "",
  ].join("\n"),
);

const cd = relative(process.cwd(), target) || ".";
console.log(`Created ${name} in ${target}: a Worker embedding edgeq with one processor of its own (src/index.ts).

Next:
  cd ${cd}
  npm install
  npm test        # type-checks, then runs test/ in workerd against local D1 and Durable Objects
  npm run dev     # applies edgeq's migrations to local D1 and serves http://localhost:8787

README.md says how to enqueue (the development token is in .dev.vars) and how to deploy.`);
