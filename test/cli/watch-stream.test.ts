import { describe, expect, it } from "vitest";
import { expectOk } from "../../cli/client";
import { EXIT } from "../../cli/errors";
import { api, completeOne, enqueueTasks, leaseOne, start, uniqueQueue } from "./commands-support";

/** A poll interval no test waits out: whatever shows up sooner came through the event stream. */
const SLOW_POLL = ["--interval", "60"];
/** How long a streamed change may take to show (a poll would take 60 s). */
const STREAMED_MS = 8_000;

// The rate and ETA on these lines need a second of the CLI's own clock: test/cli/watch-lines.test.ts moves
// that clock by hand instead of waiting here.

describe("edgeq watch follows the event stream", () => {
  it("shows a task's progress as its holder heartbeats, long before the next poll, and exits 0 on completion", async () => {
    const queue = uniqueQueue("ws");
    const [id] = await enqueueTasks(queue, [{}]);
    const watch = start(["watch", id!, ...SLOW_POLL]);
    await watch.waitFor(/pending/, STREAMED_MS);
    const lease = await leaseOne(queue);
    const beat = (progress: number) =>
      api().v1.tasks[":id"].heartbeat.$post({
        param: { id: id! },
        json: { lease_token: lease.lease_token, progress, message: "rendering" },
      });
    await expectOk(await beat(30));
    await watch.waitFor(/ 30%\s+processing attempt 1\/3/, STREAMED_MS);
    await expectOk(await beat(60));
    await watch.waitFor(/ 60%\s+processing attempt 1\/3/, STREAMED_MS);
    await expectOk(
      await api().v1.tasks[":id"].complete.$post({ param: { id: id! }, json: { lease_token: lease.lease_token } }),
    );
    const run = await watch.done;
    expect(run.code).toBe(EXIT.ok);
    const lines = run.stdout.trim().split("\n");
    expect(lines.at(-1)).toMatch(/100%\s+completed/);
    for (const line of lines) expect([...line].length).toBeLessThanOrEqual(80);
  });

  it("updates a queue's counts on events, in 80 columns", async () => {
    const queue = uniqueQueue("ws-queue-with-a-rather-long-name");
    await enqueueTasks(queue, [{}, {}, {}, {}]);
    const watch = start(["watch", queue, ...SLOW_POLL, "--until-done"]);
    await watch.waitFor(/0\/4 finished\s+pending 4/, STREAMED_MS);
    await completeOne(queue);
    await watch.waitFor(/1\/4 finished/, STREAMED_MS);
    await completeOne(queue);
    await watch.waitFor(/2\/4 finished/, STREAMED_MS);
    await completeOne(queue);
    await completeOne(queue);
    const run = await watch.done;
    expect(run.code).toBe(EXIT.ok);
    for (const line of run.stdout.trim().split("\n")) expect([...line].length).toBeLessThanOrEqual(80);
  });

  it("--poll polls instead: the same change waits for the interval", async () => {
    const queue = uniqueQueue("ws-poll");
    await enqueueTasks(queue, [{}]);
    const watch = start(["watch", queue, "--poll", "--interval", "3"]);
    await watch.waitFor(/pending 1/, STREAMED_MS);
    const changedAt = Date.now();
    await completeOne(queue);
    await watch.waitFor(/1\/1 finished/, STREAMED_MS);
    expect(Date.now() - changedAt).toBeGreaterThan(1_000);
    watch.kill("SIGINT");
    expect((await watch.done).code).toBe(EXIT.ok);
  });
});
