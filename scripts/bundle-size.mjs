// `npm run size`: what a Worker embedding edgeq bundles, from the library as it is packed (dist/lib, built by
// `npm run build:lib`). Builds a Worker with no processor — edgeq's core only — then the same with each
// opt-in part (edgeq/dashboard, edgeq/sqs, edgeq/reference) and with all three, each with esbuild as wrangler
// bundles a Worker (ESM, minified, the workerd conditions; cloudflare:* and node:* left to the runtime), and
// prints bytes and gzip bytes. `--check` exits 1 when the core-only Worker's gzip exceeds CORE_GZIP_BUDGET;
// `--json` prints the figures as JSON (test/examples/bundle-size.test.ts reads them).
import { build } from "esbuild";
import { existsSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { gzipSync } from "node:zlib";

const root = new URL("..", import.meta.url).pathname;
const lib = join(root, "dist", "lib");

/**
 * The core-only Worker's budget, gzipped: 184 KiB. Workers' free plan takes 3 MiB gzip and a paid one 10 MiB,
 * so this is not the platform's limit: it holds the line issue 33 drew, a core within a tenth of the
 * free plan's (307 KiB), so that a Worker's own code and its processors' dependencies have room, and it fails
 * the moment something pulls a large dependency (zod's whole namespace, the OpenAPI machinery) into the core.
 * Issue 33 set it at 150 KiB; serving the pack store beside the row store (issue 32: src/engine/packs/,
 * src/engine/hybrid/) added 22 KiB of edgeq's own code (148.9 -> 170.9 KiB, `npm run size`), for a task
 * that writes a tenth of the rows it did in calls of 10 and more — room kept for 9 KiB more, which the
 * round's later work used (179.1 KiB before worker sessions). Worker sessions (src/coordinator/sessions.ts,
 * the session route, the port's `sessionLeases`) added 2.7 KiB (179.1 -> 181.8 KiB, `npm run size`), for a
 * 2-minute task's heartbeats at $0.07 per million instead of $7.8: 184 KiB, room kept for 2 KiB more.
 */
export const CORE_GZIP_BUDGET = 184 * 1024;

/** The opt-in parts: the module of dist/lib each subpath a user imports (package.json exports) points to.
 * @type {Record<"dashboard" | "sqs" | "reference", string>} */
const PARTS = {
  dashboard: "http/parts/dashboard.js",
  sqs: "http/parts/sqs.js",
  reference: "http/parts/reference.js",
};

/** A Worker's module as the README's: createEdgeq with the given parts, its classes and handlers exported.
 * @param {(keyof typeof PARTS)[]} parts */
function workerSource(parts) {
  const imports = parts.map((part) => `import { ${part} } from ${JSON.stringify(join(lib, PARTS[part]))};`);
  return [
    `import { createEdgeq } from ${JSON.stringify(join(lib, "app", "index.js"))};`,
    ...imports,
    `const edgeq = createEdgeq({ processors: [], ${parts.join(", ")} });`,
    "export const { Coordinator, EventHub, Scheduler, EdgeqRpc } = edgeq;",
    "export default { fetch: edgeq.fetch, scheduled: edgeq.scheduled };",
  ].join("\n");
}

/** The minified bundle of a Worker with these parts: its bytes and gzip bytes.
 * @param {(keyof typeof PARTS)[]} parts */
export async function measure(parts) {
  const result = await build({
    stdin: { contents: workerSource(parts), resolveDir: root, sourcefile: "worker.mjs", loader: "js" },
    bundle: true,
    minify: true,
    write: false,
    format: "esm",
    platform: "neutral",
    target: "es2022",
    conditions: ["workerd", "worker", "browser"],
    mainFields: ["module", "main"],
    external: ["cloudflare:*", "node:*"],
    logLevel: "error",
  });
  const [output] = /** @type {import("esbuild").OutputFile[]} */ (result.outputFiles);
  const code = /** @type {import("esbuild").OutputFile} */ (output).contents;
  return { bytes: code.byteLength, gzip: gzipSync(code, { level: 9 }).byteLength };
}

/** Every Worker measured: the core, each part on its own beside it, and all of them. */
export async function measureAll() {
  const parts = /** @type {(keyof typeof PARTS)[]} */ (Object.keys(PARTS));
  /** @type {Record<string, (keyof typeof PARTS)[]>} */
  const variants = { core: [], ...Object.fromEntries(parts.map((p) => [`core + ${p}`, [p]])) };
  variants["core + all three"] = parts;
  /** @type {Record<string, { bytes: number, gzip: number }>} */
  const sizes = {};
  for (const [name, parts] of Object.entries(variants)) sizes[name] = await measure(parts);
  return sizes;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  if (!existsSync(join(lib, "app", "index.js"))) {
    console.error("bundle-size: no dist/lib: run `npm run build:lib` first");
    process.exit(1);
  }
  const sizes = await measureAll();
  if (process.argv.includes("--json")) console.log(JSON.stringify({ budget: CORE_GZIP_BUDGET, sizes }));
  else {
    const kib = (/** @type {number} */ n) => `${(n / 1024).toFixed(1)} KiB`;
    for (const [name, { bytes, gzip }] of Object.entries(sizes)) {
      console.log(`${name.padEnd(18)} ${String(bytes).padStart(9)} B (${kib(bytes)}), gzip ${gzip} B (${kib(gzip)})`);
    }
    console.log(`core-only budget: ${CORE_GZIP_BUDGET} B gzip (${kib(CORE_GZIP_BUDGET)})`);
  }
  const core = /** @type {{ gzip: number }} */ (sizes.core);
  if (process.argv.includes("--check") && core.gzip > CORE_GZIP_BUDGET) {
    console.error(`bundle-size: the core-only Worker is ${core.gzip} B gzip, over its ${CORE_GZIP_BUDGET} B budget`);
    process.exit(1);
  }
}
