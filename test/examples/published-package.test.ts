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
