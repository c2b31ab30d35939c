#!/usr/bin/env node
// The `edgeq` command: the bundle `npm run build:cli` makes from cli/ (run by `npm install` via `prepare`).
import { main } from "../dist/edgeq.mjs";

process.exitCode = await main(process.argv.slice(2));
