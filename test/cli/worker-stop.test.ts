import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { exitWithin, killLeftovers, runCli, startCli, tempDir, uniqueQueue, waitFor } from "./worker-support";

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
  // --wait 1: a stopping worker lets its long poll answer first (see runner.ts), so keep it short.
  const worker = startCli(["worker", queue, "--exec", "true", "--wait", "1"], env);
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

it("one pid file, one worker: a second is refused; --pid-file works for stop too", async () => {
  const queue = uniqueQueue("stop-pidfile");
  const pidFile = join(tmp.dir, "custom.pid");
  const worker = startCli(["worker", queue, "--exec", "true", "--wait", "1", "--pid-file", pidFile]);
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
