import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, inject, it } from "vitest";
import { fireTick } from "../../scripts/cron-driver.mjs";
import {
  alive,
  configureQueue,
  edgeqUrl,
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

let tmp: ReturnType<typeof tempDir> | undefined;
let orphan: number | undefined;
afterEach(() => {
  killLeftovers();
  if (orphan !== undefined && alive(orphan)) process.kill(orphan, "SIGKILL");
  tmp?.cleanup();
});

it("a task whose worker was SIGKILLed comes back after its lease expires and the reaper runs", async () => {
  tmp = tempDir();
  const queue = uniqueQueue("crash");
  await configureQueue(queue, { backoff_base_s: 1, backoff_cap_s: 1, max_attempts: 3 });
  const [id] = await enqueue(queue, [{ type: "slow" }]);
  // First attempt: record the command's pid and sleep (the worker dies meanwhile); second: finish at once.
  const pidFile = join(tmp.dir, "child.pid");
  const cmd = join(tmp.dir, "slow.sh");
  writeFileSync(
    cmd,
    `if [ "$EDGEQ_ATTEMPT" = 1 ]; then echo $$ > ${pidFile}; exec sleep 60; fi
echo '{"attempt":'"$EDGEQ_ATTEMPT"'}'
`,
  );

  // One slot: no long poll is pending when it dies (an abandoned poll would take the retry, see runner.ts).
  const first = startCli([
    "worker",
    queue,
    "--exec",
    `sh ${cmd}`,
    "--visibility",
    "2",
    // The lease kept by heartbeats (a worker session keeps it otherwise: test/cli/sdk-session.test.ts).
    "--no-session",
    "--concurrency",
    "1",
    "--pid-file",
    join(tmp.dir, "w1.pid"),
  ]);
  await waitFor("the first attempt to start", () => existsSync(pidFile) && readFileSync(pidFile, "utf8").trim());
  orphan = Number(readFileSync(pidFile, "utf8"));
  first.child.kill("SIGKILL");
  expect(await exitWithin(first, 10_000)).toBeNull();

  // Nobody heart-beats any more: the task stays processing until the reaper sees its lease expired.
  const held = await getTask(id!);
  expect(held.state).toBe("processing");
  expect(held.attempts).toBe(1);
  const expiry = Date.parse(held.lease_expires_at!);
  expect(expiry - Date.now()).toBeLessThanOrEqual(2_000);
  await waitFor("the lease to expire", () => Date.now() > expiry, 5_000);

  const reaped = await waitFor("the reaper to return the task to pending", async () => {
    await fireTick(edgeqUrl(), inject("edgeqToken"));
    const task = await getTask(id!);
    return task.state === "pending" && task;
  });
  expect(reaped.errors).toMatchObject([{ attempt: 1, kind: "lease_expired", message: "lease expired" }]);
  // After the backoff (about 1 s) it is due again, and a second worker receives it.
  await waitFor("the retry to come due", () => Date.now() >= Date.parse(reaped.run_at), 5_000);

  const second = await runCli([
    "worker",
    queue,
    "--exec",
    `sh ${cmd}`,
    "--once",
    "--pid-file",
    join(tmp.dir, "w2.pid"),
  ]);
  expect(second.code, second.stderr).toBe(0);
  const done = await getTask(id!);
  expect(done.state).toBe("completed");
  expect(done.attempts).toBe(2);
  expect(done.result).toEqual({ attempt: 2 });
});
