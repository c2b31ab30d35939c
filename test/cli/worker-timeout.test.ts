import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import {
  alive,
  configureQueue,
  enqueue,
  exited,
  getTask,
  killLeftovers,
  runCli,
  tempDir,
  uniqueQueue,
  waitFor,
} from "./worker-support";

let tmp: ReturnType<typeof tempDir>;
let leftover: number[] = [];
beforeEach(() => {
  tmp = tempDir();
  leftover = [];
});
afterEach(() => {
  killLeftovers();
  for (const pid of leftover) if (alive(pid)) process.kill(pid, "SIGKILL");
  tmp.cleanup();
});

/** A command that starts a grandchild (`sleep 60` in the background, its pid recorded), then hangs. */
function hangingCommand(): string {
  const pidFile = join(tmp.dir, "grandchild.pid");
  return `sleep 60 & echo $! > ${pidFile}; echo "working on it" >&2; wait`;
}

const grandchild = () =>
  waitFor("the command's background process to start", () => {
    const file = join(tmp.dir, "grandchild.pid");
    const pid = existsSync(file) ? Number(readFileSync(file, "utf8")) : 0;
    return pid > 0 && pid;
  });

// Issue 8.10: a hung --exec command's lease was extended for ever.
it("--timeout kills the command's whole process group at the limit and fails the task, retryable, saying it timed out", async () => {
  const queue = uniqueQueue("timeout-flag");
  // Retries far away: the worker (--once) ends once the failed task is not due any more.
  await configureQueue(queue, { max_attempts: 3, backoff_base_s: 3600, backoff_cap_s: 3600 });
  const [id] = await enqueue(queue, [{ type: "hang" }]);
  const started = Date.now();
  const run = await runCli(["worker", queue, "--exec", hangingCommand(), "--timeout", "1", "--once"]);
  expect(run.code, run.stderr).toBe(0);
  expect(Date.now() - started).toBeLessThan(15_000);
  leftover.push(await grandchild());
  await exited(leftover[0]!, "the background process to be killed with its group");

  const task = await getTask(id!);
  expect(task.state).toBe("pending"); // failed for a retry, not dead
  expect(task.attempts).toBe(1);
  expect(task.errors).toHaveLength(1);
  expect(task.errors[0]!.message).toMatch(/^timed out after 1s \(--timeout\); killed by SIGTERM: working on it$/);
  expect(run.stderr).toMatch(new RegExp(`${id} failed \\(will retry\\) in [0-9.]+s: timed out after 1s`));
});

it("the queue's max_run_s is the default limit, and --timeout overrides it", async () => {
  const queue = uniqueQueue("timeout-queue");
  await configureQueue(queue, { max_run_s: 1, backoff_base_s: 3600, backoff_cap_s: 3600 });
  const [hung] = await enqueue(queue, [{ type: "hang" }]);
  const run = await runCli(["worker", queue, "--exec", hangingCommand(), "--once"]);
  expect(run.code, run.stderr).toBe(0);
  expect(run.stderr).toContain("time limit 1s (the queue's max_run_s)");
  leftover.push(await grandchild());
  const task = await getTask(hung!);
  expect(task.state).toBe("pending");
  expect(task.errors[0]!.message).toMatch(/^timed out after 1s \(the queue's max_run_s\)/);

  // A task that needs 2 s completes under --timeout 10, though the queue says 1 s.
  const [slow] = await enqueue(queue, [{ type: "slow" }]);
  const override = await runCli([
    "worker",
    queue,
    "--exec",
    `sleep 2; echo '{"done":true}'`,
    "--timeout",
    "10",
    "--once",
  ]);
  expect(override.code, override.stderr).toBe(0);
  expect(await getTask(slow!)).toMatchObject({ state: "completed", result: { done: true } });
});

it("config set takes max_run_s (seconds or null) and config get shows it", async () => {
  const queue = uniqueQueue("timeout-config");
  const set = await runCli(["config", "set", queue, "max_run_s=900", "--json"]);
  expect(set.code, set.stderr).toBe(0);
  expect(JSON.parse(set.stdout)).toMatchObject({ max_run_s: 900 });
  const get = await runCli(["config", "get", queue]);
  expect(get.stdout).toMatch(/^max_run_s\s+900$/m);
  const cleared = await runCli(["config", "set", queue, "max_run_s=null", "--json"]);
  expect(JSON.parse(cleared.stdout)).toMatchObject({ max_run_s: null });
  const bad = await runCli(["config", "set", queue, "max_run_s=1h"]);
  expect(bad.code).toBe(2);
  expect(bad.stderr).toContain("max_run_s: expected a whole number of seconds or null");
  const flag = await runCli(["worker", queue, "--exec", "true", "--timeout", "0"]);
  expect(flag.code).toBe(2);
  expect(flag.stderr).toMatch(/--timeout: expected seconds from 1 to 604800/);
});
