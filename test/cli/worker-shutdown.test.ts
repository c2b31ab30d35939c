import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import {
  api,
  enqueue,
  exited,
  exitWithin,
  getTask,
  killLeftovers,
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

/**
 * A command for tasks of payload `{ kind }`: it records its pid in `started-<kind>`; "long" then sleeps a
 * minute; "short" waits for the file `go` and prints a result.
 */
function kindScript(): string {
  const path = join(tmp.dir, "kind.sh");
  writeFileSync(
    path,
    `echo $$ > "${tmp.dir}/started-$EDGEQ_P_KIND"
if [ "$EDGEQ_P_KIND" = long ]; then exec sleep 60; fi
while [ ! -e "${tmp.dir}/go" ]; do sleep 0.05; done
echo '{"short":"done"}'
`,
  );
  return `sh ${path}`;
}

/** The pid a task's command recorded, once it has started. */
const started = (kind: string) =>
  waitFor(`the ${kind} task to start`, () => {
    const file = join(tmp.dir, `started-${kind}`);
    const pid = existsSync(file) ? Number(readFileSync(file, "utf8")) : 0;
    return pid > 0 && pid;
  });

it("SIGTERM: a short task finishes and completes; a long one is handed back after --grace; exit 0", async () => {
  const queue = uniqueQueue("grace");
  const [longId, shortId] = await enqueue(queue, [{ payload: { kind: "long" } }, { payload: { kind: "short" } }]);
  const worker = startCli(["worker", queue, "--exec", kindScript(), "--concurrency", "2", "--grace", "1"]);
  const longPid = await started("long");
  await started("short");

  const signalled = Date.now();
  worker.child.kill("SIGTERM");
  writeFileSync(join(tmp.dir, "go"), ""); // the short task may finish now, within the grace period
  expect(await exitWithin(worker, 15_000), worker.stderr).toBe(0);
  expect(Date.now() - signalled).toBeLessThan(10_000);

  const short = await getTask(shortId!);
  expect(short.state).toBe("completed");
  expect(short.result).toEqual({ short: "done" });
  const long = await getTask(longId!);
  expect(long.state).toBe("pending"); // released: pending at once...
  expect(long.attempts).toBe(0); // ...the attempt not counted...
  expect(long.errors).toEqual([]); // ...and nothing recorded as a failure
  await exited(longPid, "the long task's command to be killed");
  expect(worker.stderr).toMatch(new RegExp(`${longId} handed back in`));
  expect(worker.stderr).toMatch(new RegExp(`${shortId} completed in`));
});

it("SIGTERM while a long poll is waiting: the handed-back task is not lost to that poll", async () => {
  const queue = uniqueQueue("grace-poll");
  const [longId] = await enqueue(queue, [{ payload: { kind: "long" } }]);
  // Two slots, one task: the worker long-polls for a second task while the first runs.
  const worker = startCli([
    "worker",
    queue,
    "--exec",
    kindScript(),
    "--concurrency",
    "2",
    "--grace",
    "1",
    "--wait",
    "5",
  ]);
  await started("long");
  worker.child.kill("SIGTERM");
  expect(await exitWithin(worker, 15_000), worker.stderr).toBe(0);
  const long = await getTask(longId!);
  expect(long.state).toBe("pending");
  expect(long.attempts).toBe(0);
});

it("a second signal hands back at once, without waiting for --grace", async () => {
  const queue = uniqueQueue("grace-twice");
  const [longId] = await enqueue(queue, [{ payload: { kind: "long" } }]);
  const worker = startCli(["worker", queue, "--exec", kindScript(), "--concurrency", "1", "--grace", "300"]);
  const longPid = await started("long");
  worker.child.kill("SIGTERM");
  await waitFor("the worker to acknowledge the first signal", () => worker.stderr.includes("stopping"));
  const signalled = Date.now();
  worker.child.kill("SIGINT");
  expect(await exitWithin(worker, 15_000), worker.stderr).toBe(0);
  expect(Date.now() - signalled).toBeLessThan(10_000);
  expect(await getTask(longId!)).toMatchObject({ state: "pending", attempts: 0 });
  await exited(longPid, "the long task's command to be killed");
});

it("a cancel, answered to the next heartbeat, stops the task's command without acking it", async () => {
  const queue = uniqueQueue("cancel");
  const [id] = await enqueue(queue, [{ payload: { kind: "long" } }]);
  // A lease of 6 s, beaten every 2 s (visibility/3): the cancel is seen within 2 s. With 1 s, a worker or
  // server stalled for a second on a busy machine let the lease expire before the beat that would have
  // learned the cancel; that beat was then rightly answered lease_lost (an expired lease is not kept), so the
  // worker logged "lease lost", not "cancelled" (reproduced by SIGSTOPping the worker for 1.5 s).
  const worker = startCli(["worker", queue, "--exec", kindScript(), "--visibility", "6", "--wait", "2"]);
  const pid = await started("long");
  await api("POST", `/v1/tasks/${id}/cancel`);
  await exited(pid, "the command to be killed");
  await waitFor("the worker to log the cancel", () => worker.stderr.includes(`${id} cancelled in`)).catch(
    (error: Error) => {
      throw new Error(`${error.message}; it logged:\n${worker.stderr}`);
    },
  );
  expect((await getTask(id!)).state).toBe("cancelled");
  worker.child.kill("SIGTERM");
  expect(await exitWithin(worker, 30_000), worker.stderr).toBe(0);
});
