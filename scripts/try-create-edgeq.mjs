// `npm create edgeq@latest my-queue` as a new user meets it, from the README's own commands: run by
// scripts/run-examples.mjs in its scratch folder with the edgeq tarball it packed. The commands are read from
// README.md's "Use edgeq in your own Worker" section (readmeFirstHour), so a wrong line there fails here: its
// first bash block line by line — the create line replaced by the README's own stand-in for the unpublished
// packages (`npm exec --package=./create-edgeq-<v>.tgz -- create-edgeq my-queue --edgeq ./edgeq-<v>.tgz`),
// `npm run dev` given a free port instead of 8787 (the machine may serve another) — then, with the project
// served, its second bash block verbatim but for that port: a push queue configured and a text-stats task
// enqueued over HTTP with curl, whose result is then awaited.
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { copyFileSync, readFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { apiCaller, freePort, until } from "../examples/dev-server.mjs";

/** Wrangler applies edgeq's migrations, bundles and boots workerd: ~40 s on 2 cores, longer under load. */
const START_TIMEOUT_MS = 180_000;

/** Seconds since `started` (ms), to one decimal. @param {number} started */
const seconds = (started) => ((Date.now() - started) / 1000).toFixed(1);

/**
 * The README's first-hour commands: the bash blocks of its "Use edgeq in your own Worker" section (the
 * first: create, install, test, dev; the second: the curl calls against `npm run dev`) and the command it
 * gives to stand in for `npm create edgeq@latest` while neither package is on the registry.
 * @param {string} readme README.md's text
 */
export function readmeFirstHour(readme) {
  const section = readme.split("\n## Use edgeq in your own Worker\n")[1]?.split("\n## ")[0];
  if (section === undefined) throw new Error('README.md has no "## Use edgeq in your own Worker" section');
  const blocks = [...section.matchAll(/```bash\n([\s\S]*?)```/g)].map((m) => /** @type {string} */ (m[1]));
  const standIn = section.match(/`(npm exec --package=[^`]+)`/)?.[1]?.replace(/\s+/g, " ");
  const [setup, calls] = blocks;
  if (setup === undefined || calls === undefined || standIn === undefined) {
    throw new Error("README.md's section lacks its two bash blocks or the npm exec line standing in for npm create");
  }
  const lines = setup.trim().split("\n");
  const dev = lines.pop();
  const create = lines.shift();
  if (!create?.startsWith("npm create edgeq@latest my-queue") || !dev?.startsWith("npm run dev")) {
    throw new Error(`README.md's first block does not start with npm create and end with npm run dev:\n${setup}`);
  }
  return { standIn, setup: [standIn, ...lines], dev: dev.replace(/\s+#.*$/, ""), calls };
}

/** npm's own settings for every step (environment, not the commands): no prompt, from its cache, quietly.
 * @type {NodeJS.ProcessEnv} */
const NPM_QUIET = {
  npm_config_yes: "true",
  npm_config_prefer_offline: "true",
  npm_config_audit: "false",
  npm_config_fund: "false",
  npm_config_loglevel: "error",
};

/** @param {string} script @param {string} cwd */
const bash = (script, cwd) =>
  spawnSync("bash", ["-e", "-c", script], { cwd, stdio: "inherit", env: { ...process.env, ...NPM_QUIET } });

/**
 * @param {{ root: string, scratch: string, edgeq: string }} where root: this repository; scratch: the folder
 *   to work in (outside the repository); edgeq: the packed edgeq tarball.
 * @returns {Promise<boolean>} whether every step passed (each failure is printed).
 */
export async function tryCreateEdgeq({ root, scratch, edgeq }) {
  const pkg = join(root, "create-edgeq");
  const { version } = JSON.parse(readFileSync(join(pkg, "package.json"), "utf8"));
  execFileSync("npm", ["pack", "--loglevel=error", "--pack-destination", scratch], {
    cwd: pkg,
    stdio: ["ignore", "ignore", "inherit"],
  });
  // The tarballs under the names the README's stand-in line gives them.
  copyFileSync(edgeq, join(scratch, `edgeq-${version}.tgz`));
  const firstHour = readmeFirstHour(readFileSync(join(root, "README.md"), "utf8"));
  const dir = join(scratch, "my-queue");
  console.log(`\n== create-edgeq (in ${dir}): npm create edgeq my-queue, npm install, npm test, npm run dev`);
  // Line by line, as a user types them: a `cd` holds for the lines after it.
  let cwd = scratch;
  for (const line of firstHour.setup) {
    const started = Date.now();
    const { status } = bash(line, cwd);
    const shown = line.replace(/\s+#.*$/, "");
    console.log(`create-edgeq: README's \`${shown}\` ${status === 0 ? "passed" : "failed"} in ${seconds(started)} s`);
    if (status !== 0) return false;
    const cd = line.match(/^cd (\S+)/)?.[1];
    if (cd !== undefined) cwd = join(cwd, cd);
  }
  const started = Date.now();
  try {
    await serveAndRun(dir, firstHour);
    console.log(
      `create-edgeq: npm run dev served the new project; its processor completed a task (${seconds(started)} s)`,
    );
    return true;
  } catch (error) {
    console.error(`create-edgeq: npm run dev: ${error instanceof Error ? error.message : String(error)}`);
    return false;
  }
}

/**
 * The README's `npm run dev` in the new project, on a free port; with it serving, the README's curl calls (the
 * port theirs but for that): the text-stats task they enqueue completes.
 * @param {string} dir @param {ReturnType<typeof readmeFirstHour>} firstHour
 */
async function serveAndRun(dir, firstHour) {
  const port = await freePort();
  // Its own process group, stopped whole: npm does not pass SIGTERM on to wrangler.
  const child = spawn("bash", ["-c", `${firstHour.dev} -- --ip 127.0.0.1 --port ${port}`], {
    cwd: dir,
    env: { ...process.env, ...NPM_QUIET, WRANGLER_SEND_METRICS: "false" },
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
    const calls = spawnSync("bash", ["-e", "-c", firstHour.calls.replaceAll("localhost:8787", `127.0.0.1:${port}`)], {
      cwd: dir,
      encoding: "utf8",
    });
    console.log(`create-edgeq: README's curl calls answered:\n${calls.stdout}`);
    if (calls.status !== 0) throw new Error(`the README's curl calls failed (${calls.status}): ${calls.stderr}`);
    // The last answer is the enqueue's: `{"tasks":[{"id":…}]}`.
    const id = [...calls.stdout.matchAll(/"id":"([0-9A-HJKMNP-TV-Z]{26})"/g)].at(-1)?.[1];
    if (id === undefined) throw new Error(`the README's enqueue answered no task id: ${calls.stdout}`);
    const token = readFileSync(join(dir, ".dev.vars"), "utf8").match(/^EDGEQ_TOKEN=(.+)$/m)?.[1];
    if (token === undefined) throw new Error("the new project's .dev.vars has no EDGEQ_TOKEN");
    const call = apiCaller(() => url, token);
    const task = await until(async () => {
      const { body: current } = await call("GET", `/v1/tasks/${id}`);
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
