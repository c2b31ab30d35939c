// The examples' test harness (not part of any example): `wrangler dev` of one or more Workers on a free
// port with fresh local state, edgeq's migrations applied first, ready once `ready` answers; stopped with
// its whole process group. Wrangler comes from the example's own node_modules (its devDependency).
import { execFile, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

/** Wrangler bundles and boots workerd in about 10 s on 2 cores; a loaded CI machine took up to 60 s. */
const START_TIMEOUT_MS = 120_000;

/** How often the ready path is asked while wrangler starts. */
const POLL_MS = 250;

/** A free port on 127.0.0.1 (scripts/try-create-edgeq.mjs serves on one too).
 * @returns {Promise<number>} */
export const freePort = () =>
  new Promise((resolve, reject) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = /** @type {import("node:net").AddressInfo} */ (server.address());
      server.close(() => resolve(port));
    });
    server.on("error", reject);
  });

/**
 * @param {{ cwd: string, configs: string[], migrate: string[], ready: string }} how
 *   configs: wrangler.toml files, the first one served on the port; migrate: the configs whose D1 `DB`
 *   gets its migrations; ready: a path that answers once the Worker runs.
 */
export async function startDev({ cwd, configs, migrate, ready }) {
  const state = await mkdtemp(join(tmpdir(), "edgeq-example-"));
  const wrangler = join(cwd, "node_modules", ".bin", "wrangler");
  const env = { ...process.env, CI: "1", WRANGLER_SEND_METRICS: "false" };
  for (const config of migrate) {
    await promisify(execFile)(
      wrangler,
      ["d1", "migrations", "apply", "DB", "--local", "--persist-to", state, "-c", config],
      { cwd, env },
    );
  }
  const port = await freePort();
  const args = ["dev", ...configs.flatMap((c) => ["-c", c]), "--ip", "127.0.0.1", "--port", String(port)];
  const child = spawn(wrangler, [...args, "--persist-to", state, "--show-interactive-dev-session=false"], {
    cwd,
    env,
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let output = "";
  for (const stream of [child.stdout, child.stderr])
    stream.on("data", (chunk) => (output = (output + chunk).slice(-20_000)));
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode === null) {
      if (child.pid !== undefined) process.kill(-child.pid, "SIGTERM");
      await new Promise((resolve) => child.once("exit", resolve));
    }
    await rm(state, { recursive: true, force: true });
  };
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) break;
    const answered = await fetch(url + ready).then(
      () => true,
      () => false,
    );
    if (answered) return { url, stop, output: () => output };
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  await stop();
  throw new Error(`wrangler dev did not start:\n${output}`);
}

/** A caller of edgeq's HTTP API at `base()` with a bearer token: answers `{ status, body }`.
 * @param {() => string} base @param {string} token */
export const apiCaller =
  (base, token) =>
  /** @param {string} method @param {string} path @param {unknown} [body] @returns {Promise<{ status: number, body: any }>} */
  async (method, path, body) => {
    const res = await fetch(base() + path, {
      method,
      headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: await res.json() };
  };

/** Asks `probe` until it returns something other than undefined, or throws after `ms`.
 * @template T @param {() => Promise<T | undefined>} probe @param {number} [ms] @returns {Promise<T>} */
export async function until(probe, ms = 30_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}
