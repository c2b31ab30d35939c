// Adds the file extension to every relative import of dist/lib's JavaScript and declarations. tsc (with
// moduleResolution "bundler", as the Worker code is written) emits `from "./worker"`; bundlers resolve that,
// Node's ESM loader does not, and `edgeq/node` runs in plain Node. Run by `npm run build:lib` after tsc.
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";

const root = resolve(process.argv[2] ?? "dist/lib");
const SPECIFIER = /(\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)(["'])(\.{1,2}\/[^"']*)\2/g;

/** The specifier with its extension, or as it was when it has one or names nothing here.
 * @param {string} file @param {string} spec */
function withExtension(file, spec) {
  if (/\.(m?js|json)$/.test(spec)) return spec;
  const target = resolve(dirname(file), spec);
  if (existsSync(`${target}.js`)) return `${spec}.js`;
  if (existsSync(join(target, "index.js"))) return `${spec}/index.js`;
  return spec;
}

/** @param {string} dir @returns {string[]} */
function files(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : /\.(js|d\.ts)$/.test(name) ? [path] : [];
  });
}

let changed = 0;
for (const file of files(root)) {
  const text = readFileSync(file, "utf8");
  const next = text.replace(
    SPECIFIER,
    (_m, lead, quote, spec) => `${lead}${quote}${withExtension(file, spec)}${quote}`,
  );
  if (next !== text) {
    writeFileSync(file, next);
    changed += 1;
  }
}
console.log(`esm-extensions: ${changed} files of ${root} rewritten`);
