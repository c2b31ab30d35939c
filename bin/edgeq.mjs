#!/usr/bin/env node
// The `edgeq` command: the bundle `npm run build:cli` makes from cli/ (packed by `npm pack` and `npm publish`,
// whose `prepack` builds it; in a clone of the repository, `npm run build:cli` or `npm test` builds it).
import { existsSync } from "node:fs";

const bundle = new URL("../dist/edgeq.mjs", import.meta.url);
if (!existsSync(bundle)) {
  console.error("edgeq: dist/edgeq.mjs is missing: run `npm run build:cli` in the edgeq repository");
  process.exit(1);
}
const { main } = await import(bundle.href);
process.exitCode = await main(process.argv.slice(2));
