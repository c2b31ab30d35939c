import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import {
  configureQueue,
  enqueue,
  exited,
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

// Issue 8.7: the worker's own long poll, abandoned as it handed back, was leased the handed-back task: it
// sat in processing with nobody running it, an attempt counted (with max_attempts 2, one try left).
it("worker stop twice while a task runs and a long poll waits: the task is pending at once, attempt not counted", async () => {
  const queue = uniqueQueue("stop-twice");
  await configureQueue(queue, { max_attempts: 2 });
  const [id] = await enqueue(queue, [{ type: "long" }]);
  const marker = join(tmp.dir, "started");
  const env = { TMPDIR: tmp.dir };
  // Two slots, one task: while the task runs, the worker long-polls (20 s) for a second one.
  const worker = startCli(
    ["worker", queue, "--exec", `echo $$ > ${marker}; exec sleep 60`, "--concurrency", "2", "--grace", "300"],
    env,
  );
  const commandPid = await waitFor(
    "the task's command to start",
    () => existsSync(marker) && Number(readFileSync(marker, "utf8")),
  );

  const first = startCli(["worker", "stop", queue], env);
  await waitFor("the worker to start stopping", () => worker.stderr.includes("get 300s to finish"));
  const second = await runCli(["worker", "stop", queue], env);
  expect(second.code, second.stderr).toBe(0);
  expect(await exitWithin(worker, 10_000), worker.stderr).toBe(0);
  expect(await exitWithin(first, 10_000), first.stderr).toBe(0);
  await exited(commandPid, "the task's command to be killed");

  expect(worker.stderr).toMatch(new RegExp(`${id} handed back in`));
  const task = await getTask(id!);
  expect(task, worker.stderr).toMatchObject({ state: "pending", attempts: 0, lease_expires_at: null });
});
