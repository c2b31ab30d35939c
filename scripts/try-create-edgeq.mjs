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
 * first: create, install, test, dev; the second: the curl calls against `npm run dev`; the third: `npm run
 * caller`, the project's second Worker; the fourth: a call of that Worker, which enqueues over RPC, an
 * enqueue for the Node worker, and `npm run worker`) and the command it gives to stand in for `npm create
 * edgeq@latest` while neither package is on the registry.
 * @param {string} readme README.md's text
 */
export function readmeFirstHour(readme) {
  const section = readme.split("\n## Use edgeq in your own Worker\n")[1]?.split("\n## ")[0];
  if (section === undefined) throw new Error('README.md has no "## Use edgeq in your own Worker" section');
  const blocks = [...section.matchAll(/```bash\n([\s\S]*?)```/g)].map((m) => /** @type {string} */ (m[1]));
  const standIn = section.match(/`(npm exec --package=[^`]+)`/)?.[1]?.replace(/\s+/g, " ");
  const [setup, calls, caller, elsewhere] = blocks;
  if (setup === undefined || calls === undefined || standIn === undefined) {
    throw new Error("README.md's section lacks its two bash blocks or the npm exec line standing in for npm create");
  }
  if (caller?.trim().split("\n").length !== 1 || !caller.startsWith("npm run caller") || elsewhere === undefined) {
    throw new Error("README.md's section lacks its third block (npm run caller alone) or its fourth (RPC and Node)");
  }
  const lines = setup.trim().split("\n");
  const dev = lines.pop();
  const create = lines.shift();
  if (!create?.startsWith("npm create edgeq@latest my-queue") || !dev?.startsWith("npm run dev")) {
    throw new Error(`README.md's first block does not start with npm create and end with npm run dev:\n${setup}`);
  }
  return {
    standIn,
    setup: [standIn, ...lines],
    dev: dev.replace(/\s+#.*$/, ""),
    calls,
    caller: caller.trim().replace(/\s+#.*$/, ""),
    elsewhere: commandsOf(elsewhere),
  };
}

/**
 * A bash block's commands as a user types them: a line ending in `\` goes on with the next.
 * @param {string} block
 */
function commandsOf(block) {
  return block
    .trim()
    .replace(/\\\n\s*/g, " ")
    .split("\n")
    .map((line) => line.replace(/\s+#.*$/, ""));
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
    console.log(`create-edgeq: the README's first hour passed: HTTP, RPC and a Node worker (${seconds(started)} s)`);
    return true;
  } catch (error) {
    console.error(`create-edgeq: npm run dev: ${error instanceof Error ? error.message : String(error)}`);
    return false;
  }
}

/**
 * A long-running command of the README (`npm run dev`, `npm run caller`, `npm run worker`) in its own process
 * group, stopped whole (npm does not pass signals on to wrangler), its output kept for a failure's message.
 * @param {string} command @param {string} cwd @param {NodeJS.ProcessEnv} [env]
 */
function background(command, cwd, env = {}) {
  const child = spawn("bash", ["-c", command], {
    cwd,
    env: { ...process.env, ...NPM_QUIET, WRANGLER_SEND_METRICS: "false", ...env },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let output = "";
  for (const stream of [child.stdout, child.stderr])
    stream.on("data", (chunk) => (output = (output + chunk).slice(-20_000)));
  return {
    output: () => output,
    exited: () => child.exitCode !== null,
    /** @param {NodeJS.Signals} signal @returns {Promise<string>} how it ended: `exit 0`, `SIGINT` */
    stop: async (signal = "SIGTERM") => {
      if (child.exitCode === null && child.signalCode === null) {
        if (child.pid !== undefined) process.kill(-child.pid, signal);
        await new Promise((resolve) => child.once("exit", resolve));
      }
      return child.signalCode ?? `exit ${child.exitCode}`;
    },
  };
}

/** Answers once `url` answers (with `status` when given: the Worker's own answer, not a proxy's while wrangler
 * starts), or throws with the server's output. @param {string} url
 * @param {ReturnType<typeof background>} server @param {number} [status] */
async function served(url, server, status) {
  await until(async () => {
    if (server.exited()) throw new Error(`exited:\n${server.output()}`);
    const answered = (await fetch(url).catch(() => undefined))?.status;
    return status === undefined || answered === status ? answered : undefined;
  }, START_TIMEOUT_MS).catch((error) => {
    throw new Error(`${url} did not serve: ${error.message}\n${server.output()}`);
  });
}

/** The last task id in a command's output. @param {string} output */
const lastId = (output) => [...output.matchAll(/"id":"([0-9A-HJKMNP-TV-Z]{26})"/g)].at(-1)?.[1];

/**
 * The README's `npm run dev` in the new project, on a free port; with it serving, the README's curl calls (the
 * port theirs but for that): the text-stats task they enqueue completes. Then its `npm run caller` (the
 * project's second Worker, on a free port of its own) and its fourth block: the caller's answer is a task
 * enqueued over RPC and completed; the Node worker of `npm run worker` completes the task enqueued for it
 * and stops on Ctrl-C (SIGINT) with exit code 0.
 * @param {string} dir @param {ReturnType<typeof readmeFirstHour>} firstHour
 */
async function serveAndRun(dir, firstHour) {
  const port = await freePort();
  // The caller's port is chosen when the caller starts: one chosen now could be taken meanwhile by the first
  // server's own processes (workerd, its inspector), and a request meant for the caller answered by them.
  let callerPort = 0;
  /** The README's addresses, on the ports this run serves. @param {string} text */
  const ported = (text) =>
    text.replaceAll("localhost:8787", `127.0.0.1:${port}`).replaceAll("localhost:8788", `127.0.0.1:${callerPort}`);
  const url = `http://127.0.0.1:${port}`;
  const dev = background(`${firstHour.dev} -- --ip 127.0.0.1 --port ${port}`, dir);
  /** @type {ReturnType<typeof background>[]} */
  const running = [dev];
  try {
    await served(`${url}/health`, dev);
    const calls = spawnSync("bash", ["-e", "-c", ported(firstHour.calls)], { cwd: dir, encoding: "utf8" });
    console.log(`create-edgeq: README's curl calls answered:\n${calls.stdout}`);
    if (calls.status !== 0) throw new Error(`the README's curl calls failed (${calls.status}): ${calls.stderr}`);
    // The last answer is the enqueue's: `{"tasks":[{"id":…}]}`.
    const id = lastId(calls.stdout);
    if (id === undefined) throw new Error(`the README's enqueue answered no task id: ${calls.stdout}`);
    const token = readFileSync(join(dir, ".dev.vars"), "utf8").match(/^EDGEQ_TOKEN=(.+)$/m)?.[1];
    if (token === undefined) throw new Error("the new project's .dev.vars has no EDGEQ_TOKEN");
    const call = apiCaller(() => url, token);
    /** The task once finished. @param {string} taskId */
    const finished = (taskId) =>
      until(async () => {
        const { body: current } = await call("GET", `/v1/tasks/${taskId}`);
        return ["completed", "dead"].includes(current.state) ? current : undefined;
      });
    const task = await finished(id);
    if (task.state !== "completed" || JSON.stringify(task.result) !== '{"words":3,"reading_s":1}') {
      throw new Error(`the task ended ${task.state}: ${JSON.stringify(task)}\n${dev.output()}`);
    }
    console.log("create-edgeq: npm run dev served the new project; its processor completed a task");

    callerPort = await freePort();
    const caller = background(`${firstHour.caller} -- --ip 127.0.0.1 --port ${callerPort}`, dir);
    running.push(caller);
    // The caller Worker answers a GET with its own 405 (it takes POST only).
    await served(`http://127.0.0.1:${callerPort}/`, caller, 405);
    // The fourth block in the shell of the second: its `$TOKEN` is the second block's.
    const tokenLine = firstHour.calls.split("\n").find((line) => line.startsWith("TOKEN="));
    if (tokenLine === undefined) throw new Error("the README's curl calls set no TOKEN");
    let answered = "";
    for (const command of firstHour.elsewhere) {
      if (!command.startsWith("npm run worker")) {
        const run = spawnSync("bash", ["-e", "-c", `${tokenLine}\n${ported(command)}`], { cwd: dir, encoding: "utf8" });
        console.log(`create-edgeq: README's \`${command.slice(0, 60)}…\` answered: ${run.stdout.trim()}`);
        if (run.status !== 0) throw new Error(`the README's \`${command}\` failed (${run.status}): ${run.stderr}`);
        answered = run.stdout;
        // The caller's answer: the task it enqueued over RPC, finished.
        if (command.includes("localhost:8788") && !/"state":"completed","result":\{"words":\d+/.test(answered)) {
          throw new Error(`the caller Worker's task did not complete: ${answered}\n${caller.output()}`);
        }
        continue;
      }
      // The last call enqueued the Node worker's task; the worker runs until Ctrl-C.
      const draftId = lastId(answered);
      if (draftId === undefined)
        throw new Error(`the README's enqueue for the Node worker answered no id: ${answered}`);
      const worker = background(command, dir, { EDGEQ_URL: url });
      running.push(worker);
      const draft = await finished(draftId);
      if (draft.state !== "completed")
        throw new Error(`the Node worker's task ended ${draft.state}: ${worker.output()}`);
      // Its log line is written as the ack is sent: give it the moment to reach the pipe.
      await until(async () => (worker.output().includes(`completed ${draftId}`) ? true : undefined), 10_000);
      // Ctrl-C in a terminal signals the whole foreground group: npm ends by the signal, the worker (which
      // handles it) by finishing its running tasks and handing the rest back.
      const ended = await worker.stop("SIGINT");
      console.log(`create-edgeq: README's \`npm run worker\` completed ${draftId} and stopped on Ctrl-C (${ended})`);
      if (!["exit 0", "SIGINT"].includes(ended) || /error/i.test(worker.output())) {
        throw new Error(`npm run worker ended ${ended} on Ctrl-C:\n${worker.output()}`);
      }
    }
  } finally {
    for (const server of running.reverse()) await server.stop();
  }
}
