// `npm create edgeq@latest my-queue` as a new user meets it, run by scripts/run-examples.mjs in its scratch
// folder with the edgeq tarball it packed: packs create-edgeq, runs its bin the way `npm create` does
// (`npm exec --package=create-edgeq… -- create-edgeq my-queue`, here with `--edgeq <tarball>`), then in the
// new project `npm install`, `npm test`, and `npm run dev` (the script verbatim, on a free port), against
// which it enqueues a text-stats task over HTTP with the token of .dev.vars and waits for its result.
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { apiCaller, freePort, until } from "../examples/dev-server.mjs";

/** Wrangler applies edgeq's migrations, bundles and boots workerd: ~40 s on 2 cores, longer under load. */
const START_TIMEOUT_MS = 180_000;

/** Seconds since `started` (ms), to one decimal. @param {number} started */
const seconds = (started) => ((Date.now() - started) / 1000).toFixed(1);

/** @param {string[]} args @param {string} cwd */
const npm = (args, cwd) => spawnSync("npm", args, { cwd, stdio: "inherit", env: process.env });

/**
 * @param {{ root: string, scratch: string, edgeq: string }} where root: this repository; scratch: the folder
 *   to work in (outside the repository); edgeq: the packed edgeq tarball.
 * @returns {Promise<boolean>} whether every step passed (each failure is printed).
 */
export async function tryCreateEdgeq({ root, scratch, edgeq }) {
  const pkg = join(root, "create-edgeq");
  const { name, version } = JSON.parse(readFileSync(join(pkg, "package.json"), "utf8"));
  execFileSync("npm", ["pack", "--loglevel=error", "--pack-destination", scratch], {
    cwd: pkg,
    stdio: ["ignore", "ignore", "inherit"],
  });
  const tarball = join(scratch, `${name}-${version}.tgz`);
  const dir = join(scratch, "my-queue");
  console.log(`\n== create-edgeq (in ${dir}): npm create edgeq my-queue, npm install, npm test, npm run dev`);
  /** Each step by the name printed with its time (a slow install or start-up shows in the log). */
  const steps = {
    "npm create edgeq": () =>
      npm(["exec", "--yes", `--package=${tarball}`, "--", "create-edgeq", "my-queue", "--edgeq", edgeq], scratch),
    "npm install": () => npm(["install", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"], dir),
    "npm test": () => npm(["test"], dir),
  };
  for (const [step, run] of Object.entries(steps)) {
    const started = Date.now();
    const { status } = run();
    console.log(`create-edgeq: ${step} ${status === 0 ? "passed" : "failed"} in ${seconds(started)} s`);
    if (status !== 0) return false;
  }
  const started = Date.now();
  try {
    await serveAndRun(dir);
    console.log(
      `create-edgeq: npm run dev served the new project; its processor completed a task (${seconds(started)} s)`,
    );
    return true;
  } catch (error) {
    console.error(`create-edgeq: npm run dev: ${error instanceof Error ? error.message : String(error)}`);
    return false;
  }
}

/** `npm run dev` in the new project on a free port: a text-stats task enqueued over HTTP completes.
 * @param {string} dir */
async function serveAndRun(dir) {
  const port = await freePort();
  // Its own process group, stopped whole: npm does not pass SIGTERM on to wrangler.
  const child = spawn("npm", ["run", "dev", "--", "--ip", "127.0.0.1", "--port", String(port)], {
    cwd: dir,
    env: { ...process.env, WRANGLER_SEND_METRICS: "false" },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let output = "";
  for (const stream of [child.stdout, child.stderr])
    stream.on("data", (chunk) => (output = (output + chunk).slice(-20_000)));
  const url = `http://127.0.0.1:${port}`;
  try {
    await until(async () => {
      if (child.exitCode !== null) throw new Error(`exited (${child.exitCode})`);
      return (await fetch(`${url}/health`).catch(() => undefined))?.status;
    }, START_TIMEOUT_MS).catch((error) => {
      throw new Error(`did not serve: ${error.message}\n${output}`);
    });
    const token = readFileSync(join(dir, ".dev.vars"), "utf8").match(/^EDGEQ_TOKEN=(.+)$/m)?.[1];
    if (token === undefined) throw new Error("the new project's .dev.vars has no EDGEQ_TOKEN");
    const call = apiCaller(() => url, token);
    const config = await call("PUT", "/v1/queues/transcripts/config", { mode: "push" });
    if (config.status !== 200) throw new Error(`PUT config answered ${config.status}: ${JSON.stringify(config.body)}`);
    const { status, body } = await call("POST", "/v1/queues/transcripts/tasks", {
      type: "text-stats",
      payload: { text: "hello edge queue" },
    });
    if (status !== 201) throw new Error(`enqueue answered ${status}: ${JSON.stringify(body)}`);
    const task = await until(async () => {
      const { body: current } = await call("GET", `/v1/tasks/${body.tasks[0].id}`);
      return ["completed", "dead"].includes(current.state) ? current : undefined;
    });
    if (task.state !== "completed" || JSON.stringify(task.result) !== '{"words":3,"reading_s":1}') {
      throw new Error(`the task ended ${task.state}: ${JSON.stringify(task)}\n${output}`);
    }
  } finally {
    if (child.exitCode === null) {
      if (child.pid !== undefined) process.kill(-child.pid, "SIGTERM");
      await new Promise((resolve) => child.once("exit", resolve));
    }
  }
}
