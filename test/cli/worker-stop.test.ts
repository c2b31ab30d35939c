import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import {
  enqueue,
  exitWithin,
  getTask,
  killLeftovers,
  runCli,
  startCli,
  tempDir,
  uniqueQueue,
  waitFor,
} from "./worker-support";

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => {
  killLeftovers();
  tmp.cleanup();
});

/** The pid recorded in a pid file, once it is there. */
const recorded = (path: string) =>
  waitFor(`the pid file ${path}`, () => existsSync(path) && Number(readFileSync(path, "utf8")));

it("worker stop <queue> stops a background worker through its default pid file", async () => {
  const queue = uniqueQueue("stop");
  // TMPDIR: the default pid file lives in the OS temporary directory; keep this test's there.
  const env = { TMPDIR: tmp.dir };
  const worker = startCli(["worker", queue, "--exec", "true"], env);
  const pidFile = join(tmp.dir, `edgeq-worker-${queue}.pid`);
  expect(await recorded(pidFile)).toBe(worker.child.pid);

  const stop = await runCli(["worker", "stop", queue], env);
  expect(stop.code, stop.stderr).toBe(0);
  expect(stop.stdout).toBe(`stopped worker ${worker.child.pid}\n`);
  expect(await exitWithin(worker, 5_000), worker.stderr).toBe(0);
  expect(existsSync(pidFile)).toBe(false);

  // Nothing left to stop: a clear error.
  const again = await runCli(["worker", "stop", queue], env);
  expect(again.code).toBe(1);
  expect(again.stderr).toBe(`edgeq: no worker is running (no pid file ${pidFile})\n`);
});

// Issue 8.9: an idle worker waited out its 20 s long poll before exiting, and `worker stop` said nothing.
it("worker stop of an idle worker long-polling with the default 20 s wait takes under 2 s and says what it does", async () => {
  const queue = uniqueQueue("stop-idle");
  const env = { TMPDIR: tmp.dir };
  const worker = startCli(["worker", queue, "--exec", "true"], env);
  await recorded(join(tmp.dir, `edgeq-worker-${queue}.pid`));
  // The worker logs "started:" and, in the same turn of its event loop, sends its first lease request (an
  // empty queue: the server holds it 20 s), so the stop below finds that request open.
  await waitFor("the worker to start", () => worker.stderr.includes("started:"));

  const started = Date.now();
  const stop = await runCli(["worker", "stop", queue], env);
  const took = Date.now() - started;
  expect(stop.code, stop.stderr).toBe(0);
  expect(took, `${stop.stderr}${worker.stderr}`).toBeLessThan(2_000);
  expect(stop.stderr).toMatch(new RegExp(`sent SIGTERM to worker ${worker.child.pid}; waiting up to 60s`));
  expect(await exitWithin(worker, 2_000), worker.stderr).toBe(0);
  expect(worker.stderr).toContain("stopping: no task is running; ending the lease request");
  expect(worker.stderr).toMatch(/: stopped\n$/);
});

// Issue 21.3: under wrangler dev a hung-up request is never seen by the Worker, so a stopped worker's long
// poll stayed parked in the coordinator and took the next task (stats said processing: 1, no worker ran).
// The worker names each poll (waiter_id) and withdraws it as it stops.
it("a stopped worker's long poll takes no task enqueued after it exits", async () => {
  const queue = uniqueQueue("stop-withdrawn");
  const env = { TMPDIR: tmp.dir };
  const worker = startCli(["worker", queue, "--exec", "true"], env);
  await waitFor("the worker to start", () => worker.stderr.includes("started:"));
  const stop = await runCli(["worker", "stop", queue], env);
  expect(stop.code, stop.stderr).toBe(0);
  expect(await exitWithin(worker, 2_000), worker.stderr).toBe(0);

  const [id] = await enqueue(queue, [{ payload: { n: 1 } }]);
  // Proving a negative: a parked poll is handed a task within milliseconds of its enqueue; a second
  // is far past that, and the task must still be pending, unleased, attempt not counted.
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  expect(await getTask(id!)).toMatchObject({ state: "pending", attempts: 0, lease_expires_at: null });
});

it("one pid file, one worker: a second is refused; --pid-file works for stop too", async () => {
  const queue = uniqueQueue("stop-pidfile");
  const pidFile = join(tmp.dir, "custom.pid");
  const worker = startCli(["worker", queue, "--exec", "true", "--pid-file", pidFile]);
  await recorded(pidFile);

  const second = await runCli(["worker", queue, "--exec", "true", "--pid-file", pidFile]);
  expect(second.code).toBe(2);
  expect(second.stderr).toMatch(/a worker is already running with pid file/);

  const stop = await runCli(["worker", "stop", "--pid-file", pidFile]);
  expect(stop.code, stop.stderr).toBe(0);
  expect(await exitWithin(worker, 5_000)).toBe(0);
  expect(existsSync(pidFile)).toBe(false);
});

it("worker stop needs a queue or a pid file", async () => {
  const run = await runCli(["worker", "stop"]);
  expect(run.code).toBe(2);
  expect(run.stderr).toMatch(/give <queue> or --pid-file/);
});
