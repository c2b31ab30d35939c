import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { enqueue, getTask, killLeftovers, startCli, tempDir, uniqueQueue, waitFor, exitWithin } from "./worker-support";

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => {
  killLeftovers();
  tmp.cleanup();
});

// Issue 8.1: a long poll answered after it waited gets a provisional lease (`claim_by`), void unless claimed
// within seconds. The worker claims on receipt, before running anything.
it("the worker claims a task its long poll was handed after waiting, before it runs it", async () => {
  const queue = uniqueQueue("claim");
  const marker = join(tmp.dir, "running");
  const go = join(tmp.dir, "go");
  // The command runs until the test lets it finish (the file `go`), so it is looked at while it runs.
  const command = `touch ${marker}; while [ ! -e ${go} ]; do sleep 0.05; done`;
  const worker = startCli(["worker", queue, "--exec", command, "--wait", "20s"]);
  await waitFor("the worker to start", () => worker.stderr.includes("started:"));
  // Due in 2 s: the worker's long poll is parked by then, so the task comes through the coordinator's
  // alarm to a poll that waited — the provisional path.
  const [id] = await enqueue(queue, [{ payload: { n: 1 }, delay_s: 2 }]);
  await waitFor("the command to start", () => existsSync(marker));
  const running = (await getTask(id!)) as Awaited<ReturnType<typeof getTask>> & { claim_by: string | null };
  expect(running, worker.stderr).toMatchObject({ state: "processing", claim_by: null, attempts: 1 });
  writeFileSync(go, "");
  await waitFor("the task to complete", async () => (await getTask(id!)).state === "completed");
  worker.child.kill("SIGTERM");
  expect(await exitWithin(worker, 10_000)).toBe(0);
});
