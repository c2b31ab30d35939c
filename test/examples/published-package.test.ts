import { readFileSync } from "node:fs";
import { expect, it } from "vitest";

/** The npm lifecycle scripts npm runs when a user installs the package (and npm 11 warns about each). */
const INSTALL_TIME = ["preinstall", "install", "postinstall", "prepare"];

it("the published package.json runs nothing at install, and packing builds what it ships", () => {
  const { scripts, files } = JSON.parse(readFileSync("package.json", "utf8"));
  expect(Object.keys(scripts).filter((name) => INSTALL_TIME.includes(name))).toEqual([]);
  // `npm pack` and `npm publish` build dist/ first (scripts/run-examples.mjs packs through it).
  expect(scripts.prepack).toBe("npm run build:cli && npm run build:lib");
  expect(files).toEqual(expect.arrayContaining(["dist/lib", "dist/edgeq.mjs"]));
});

it("its source maps carry their sources, since src/ is not published", () => {
  // The library build writes a map beside each module; a map whose `sources` are missing from the package
  // made Vite print "Sourcemap … points to missing source files" once per module in a user's test run.
  const { compilerOptions } = parseJsonc(readFileSync("tsconfig.build.json", "utf8"));
  expect(compilerOptions).toMatchObject({ sourceMap: true, inlineSources: true });
  expect(compilerOptions.declarationMap).not.toBe(true);
  const { files } = JSON.parse(readFileSync("package.json", "utf8"));
  expect(files).not.toContain("src");
  const map = JSON.parse(readFileSync("dist/lib/app/index.js.map", "utf8"));
  expect(map.sourcesContent).toHaveLength(map.sources.length);
});

it("names wrangler as an optional peer, at the version its devDependency is", () => {
  const { peerDependencies, peerDependenciesMeta, devDependencies } = JSON.parse(readFileSync("package.json", "utf8"));
  // Optional: edgeq/client and edgeq/node run without it; a Worker embedding edgeq needs one at least this
  // new (older ones refuse the compatibility date of the Worker created by create-edgeq).
  expect(peerDependencies.wrangler).toBe(devDependencies.wrangler);
  expect(peerDependenciesMeta.wrangler).toEqual({ optional: true });
});

/** tsconfig's JSON with comments: the comment lines dropped (none of its strings holds `//`). */
function parseJsonc(text: string) {
  return JSON.parse(text.replace(/^\s*\/\/.*$/gm, ""));
}
